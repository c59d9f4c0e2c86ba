package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestControlWriter feeds a scenario's stdout in pieces and checks which
// commands ran, what went back on stdin and that the transcript is kept
// whole.
func TestControlWriter(t *testing.T) {
	tests := []struct {
		name      string
		chunks    []string
		commands  []string
		replies   string
		remainder string // unfinished line left over
	}{
		{"no control lines", []string{"ok   a\n", "ok   b\n"}, nil, "", ""},
		{"one command", []string{"ok   a\n@control kill 2\n"}, []string{"kill 2"}, "@ok kill 2\n", ""},
		{"split across writes", []string{"@contr", "ol sto", "p 1\nok   x\n@control cont 1\n"},
			[]string{"stop 1", "cont 1"}, "@ok stop 1\n@ok cont 1\n", ""},
		{"CRLF and spaces", []string{"@control  leader \r\n"}, []string{"leader"}, "@ok leader\n", ""},
		{"unfinished line waits", []string{"@control kill 3"}, nil, "", "@control kill 3"},
		{"prefix only at line start", []string{"ok   @control kill 1\n"}, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			var replies bytes.Buffer
			w := &controlWriter{ctx: context.Background(), reply: &replies,
				do: func(_ context.Context, command string) string {
					got = append(got, command)
					return "@ok " + command
				}}
			for _, c := range tt.chunks {
				if n, err := w.Write([]byte(c)); err != nil || n != len(c) {
					t.Fatalf("Write(%q) = %d, %v", c, n, err)
				}
			}
			if !reflect.DeepEqual(got, tt.commands) {
				t.Errorf("commands = %q, want %q", got, tt.commands)
			}
			if replies.String() != tt.replies {
				t.Errorf("replies = %q, want %q", replies.String(), tt.replies)
			}
			if w.out.String() != strings.Join(tt.chunks, "") {
				t.Errorf("transcript = %q, want everything written", w.out.String())
			}
			if string(w.partial) != tt.remainder {
				t.Errorf("partial = %q, want %q", w.partial, tt.remainder)
			}
		})
	}
}

// TestEnsembleControlErrors checks the answers to commands that cannot be
// carried out; none of them touches a process.
func TestEnsembleControlErrors(t *testing.T) {
	e := &ensemble{kind: kindZkserverd}
	for i := 1; i <= ensembleSize; i++ {
		e.members = append(e.members, &member{id: i, clientPort: 1})
	}
	tests := []struct{ command, want string }{
		{"", "@error bad control command"},
		{"kill", "@error bad control command"},
		{"kill 1 2", "@error bad control command"},
		{"kill 0", `@error no member "0"`},
		{"stop 4", `@error no member "4"`},
		{"cont x", `@error no member "x"`},
		{"explode 1", `@error unknown control command "explode"`},
		// No member runs, so the ensemble never serves.
		{"leader", "@error context deadline exceeded"},
		{"wait", "@error context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if got := e.control(ctx, tt.command); !strings.HasPrefix(got, tt.want) {
				t.Errorf("control(%q) = %q, want prefix %q", tt.command, got, tt.want)
			}
		})
	}
}

// TestEnsembleCfg checks the members' zoo.cfg: every member lists every
// server, read-only scenarios get local sessions (both kinds) and
// readonlymode.enabled (zkserverd only: ZooKeeper gets it as -D).
func TestEnsembleCfg(t *testing.T) {
	all := []*member{
		{id: 1, clientPort: 2181, quorumPort: 2888, electionPort: 3888, home: "/w/m1"},
		{id: 2, clientPort: 2182, quorumPort: 2889, electionPort: 3889, home: "/w/m2"},
		{id: 3, clientPort: 2183, quorumPort: 2890, electionPort: 3890, home: "/w/m3"},
	}
	common := []string{"tickTime=1000", "initLimit=10", "syncLimit=5", "dataDir=/w/m2/data",
		"clientPort=2182", "clientPortAddress=127.0.0.1", "4lw.commands.whitelist=*",
		"server.1=127.0.0.1:2888:3888", "server.2=127.0.0.1:2889:3889", "server.3=127.0.0.1:2890:3890"}
	local := []string{"localSessionsEnabled=true", "localSessionsUpgradingEnabled=true"}
	tests := []struct {
		kind     string
		readOnly bool
		want     []string
		not      []string
	}{
		{kindZkserverd, false, common, append([]string{"readonlymode.enabled=true"}, local...)},
		{kindZooKeeper, false, common, append([]string{"readonlymode.enabled=true"}, local...)},
		{kindZkserverd, true, append(append([]string{"readonlymode.enabled=true"}, local...), common...), nil},
		{kindZooKeeper, true, append(local, common...), []string{"readonlymode.enabled=true"}},
	}
	for _, tt := range tests {
		cfg := ensembleCfg(tt.kind, all[1], all, tt.readOnly, "")
		lines := splitLines(cfg)
		for _, w := range tt.want {
			if !slices.Contains(lines, w) {
				t.Errorf("%s readOnly=%v: no line %q in\n%s", tt.kind, tt.readOnly, w, cfg)
			}
		}
		for _, n := range tt.not {
			if slices.Contains(lines, n) {
				t.Errorf("%s readOnly=%v: unexpected line %q", tt.kind, tt.readOnly, n)
			}
		}
	}
}

// TestMarkEnsemble checks the naming convention that makes a scenario an
// ensemble (and read-only) scenario.
func TestMarkEnsemble(t *testing.T) {
	tests := []struct {
		name                                  string
		ensemble, readOnly, quorumTLS, secure bool
	}{
		{"java/api", false, false, false, false},
		{"java/ensemble-kill-leader", true, false, false, false},
		{"kazoo/ensemble-readonly", true, true, false, false},
		{"curator/ensemble-quorum-loss", true, false, false, false},
		{"zkcli/ensemble-notes", true, false, false, false},
		{"kazoo/session-ensemble-readonly", false, false, false, false},
		{"java/ensemble-quorumtls", true, false, true, false},
		{"java/tls", false, false, false, true},
		{"zkcli/tls-more", false, false, false, true},
		{"kazoo/mtls", false, false, false, false},
	}
	for _, tt := range tests {
		sc := markEnsemble(scenario{name: tt.name, timeout: time.Second})
		if sc.ensemble != tt.ensemble || sc.readOnly != tt.readOnly || sc.quorumTLS != tt.quorumTLS || sc.secure != tt.secure {
			t.Errorf("%s: ensemble=%v readOnly=%v quorumTLS=%v secure=%v, want %v %v %v %v", tt.name,
				sc.ensemble, sc.readOnly, sc.quorumTLS, sc.secure, tt.ensemble, tt.readOnly, tt.quorumTLS, tt.secure)
		}
		if want := map[bool]time.Duration{false: time.Second, true: ensembleTimeout}[tt.ensemble]; sc.timeout != want {
			t.Errorf("%s: timeout %v, want %v", tt.name, sc.timeout, want)
		}
	}
}

// TestMemberLogTails: a failed ensemble scenario prints the last lines of
// every member's log, in member order, and says which log it could not read.
func TestMemberLogTails(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"member1": "a\nb\nc\n",
		"member2": "only\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "server.log"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "member3", "server.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := memberLogTails(dir, 2)
	want := []string{"member1 log| b", "member1 log| c", "member2 log| only"}
	if len(got) != len(want)+1 || !reflect.DeepEqual(got[:len(want)], want) {
		t.Fatalf("memberLogTails = %q, want %q and a line for member3", got, want)
	}
	if !strings.HasPrefix(got[len(want)], "member3 log: ") {
		t.Fatalf("unreadable log reported as %q", got[len(want)])
	}
}
