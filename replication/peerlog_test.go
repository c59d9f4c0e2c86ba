package replication

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/zkserverd/zkserverd/internal/testutil"
)

// fakeClock is a settable clock for peerLog.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestPeerLogRateLimits: raft's complaints about one member give one line
// when it goes down, a reminder with the count left out, and one line
// when it answers again; other lines and other members are not affected.
func TestPeerLogRateLimits(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:3: connect: connection refused")
	two := raft.Server{Suffrage: raft.Voter, ID: "2", Address: "127.0.0.1:2"}
	// step is one thing that happens; want are substrings of the lines it
	// logs, in order (none: it logs nothing).
	type step struct {
		advance time.Duration
		log     func(hclog.Logger)
		answer  string // an address that answered
		want    []string
	}
	heartbeat := func(l hclog.Logger) {
		l.Error("failed to heartbeat to", "peer", raft.ServerAddress("127.0.0.1:3"), "backoff time", 10*time.Millisecond, "error", refused)
	}
	appendTo := func(s raft.Server) func(hclog.Logger) {
		return func(l hclog.Logger) { l.Error("failed to appendEntries to", "peer", s, "error", refused) }
	}
	contact := func(l hclog.Logger) {
		l.Warn("failed to contact", "server-id", raft.ServerID("3"), "time", time.Second)
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"down then back", []step{
			{log: heartbeat, want: []string{`level=ERROR msg="failed to heartbeat to"`, `member=3 repeats=`}},
			{log: heartbeat},
			{log: contact}, // by id: the same member
			{log: heartbeat},
			{answer: "127.0.0.1:3", want: []string{`level=INFO msg="member reachable again" component=raft member=3 addr=127.0.0.1:3`, `suppressed=3`}},
			{log: heartbeat, want: []string{`msg="failed to heartbeat to"`}}, // down again: a new line
		}},
		{"a reminder with the count", []step{
			{log: heartbeat, want: []string{`failed to heartbeat to`}},
			{advance: time.Minute, log: heartbeat},
			{advance: time.Minute, log: heartbeat},
			{advance: 4 * time.Minute, log: heartbeat, want: []string{`member=3 down_for=6m0s suppressed=2`}},
			{advance: time.Minute, log: heartbeat},
		}},
		{"members apart", []step{
			{log: heartbeat, want: []string{`member=3`}},
			{log: appendTo(two), want: []string{`failed to appendEntries to`, `member=2`}},
			{log: appendTo(two)},
			{answer: "127.0.0.1:2", want: []string{`member reachable again`, `member=2`, `suppressed=1`}},
			{log: heartbeat},
		}},
		{"an address learned from raft", []step{
			{log: appendTo(raft.Server{ID: "7", Address: "10.0.0.7:2888"}), want: []string{`member=7`}},
			{log: func(l hclog.Logger) {
				l.Error("failed to heartbeat to", "peer", raft.ServerAddress("10.0.0.7:2888"), "error", refused)
			}},
			{answer: "10.0.0.7:2888", want: []string{`member=7`, `suppressed=1`}},
		}},
		{"an answer from a member that was up", []step{
			{answer: "127.0.0.1:3"},
		}},
		{"lines without a member or an error pass", []step{
			{log: func(l hclog.Logger) { l.Warn("failed to contact quorum of nodes, stepping down") }, want: []string{`stepping down`}},
			{log: func(l hclog.Logger) { l.Warn("failed to contact quorum of nodes, stepping down") }, want: []string{`stepping down`}},
			{log: func(l hclog.Logger) { l.Warn("appendEntries rejected, sending older logs", "peer", two, "next", 5) }, want: []string{`rejected`}},
			{log: func(l hclog.Logger) { l.Warn("appendEntries rejected, sending older logs", "peer", two, "next", 5) }, want: []string{`rejected`}},
			{log: func(l hclog.Logger) { l.Info("pipelining replication", "peer", two) }, want: []string{`pipelining`}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			sl := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
			clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			resolve := func(addr string) (string, bool) {
				id, ok := map[string]string{"127.0.0.1:2": "2", "127.0.0.1:3": "3"}[addr]
				return id, ok
			}
			pl := newPeerLog(raftSlog(sl), clock.now, resolve)
			l := newPeerHCLogger(sl, pl, false).Named("replication") // derived loggers share the state
			for i, s := range tc.steps {
				out.Reset()
				clock.t = clock.t.Add(s.advance)
				if s.log != nil {
					s.log(l)
				}
				if s.answer != "" {
					pl.answered(s.answer)
				}
				got := out.String()
				if len(s.want) == 0 && got != "" {
					t.Fatalf("step %d logged %q, want nothing", i, got)
				}
				if n := strings.Count(got, "\n"); len(s.want) > 0 && n != 1 {
					t.Fatalf("step %d logged %d lines, want 1: %q", i, n, got)
				}
				for _, w := range s.want {
					if !strings.Contains(got, w) {
						t.Fatalf("step %d logged %q, want it to contain %q", i, got, w)
					}
				}
			}
		})
	}
}

// TestAnswerConnReportsReads: a connection to a member tells peerLog that
// the member is back when bytes arrive, also on a connection that was open
// before the member was taken as down, and that is said once.
func TestAnswerConnReportsReads(t *testing.T) {
	const addr = "10.0.0.1:1"
	var out bytes.Buffer
	pl := newPeerLog(slog.New(slog.NewTextHandler(&out, nil)), time.Now, nil)
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	c := &answerConn{Conn: client, addr: addr, pl: pl}
	steps := []struct {
		name      string
		fail      bool // raft complains about the member first
		wantLines int  // "reachable again" lines so far
		wantDown  bool
	}{
		{"a read while up", false, 0, false},
		{"a read after a failure", true, 1, false},
		{"another read", false, 1, false},
		{"down again, then a read", true, 2, false},
	}
	buf := make([]byte, 1)
	for _, st := range steps {
		if st.fail {
			if ok, _ := pl.failed(addr); !ok {
				t.Fatalf("%s: the first failure was not logged", st.name)
			}
		}
		go server.Write([]byte("x"))
		if _, err := c.Read(buf); err != nil {
			t.Fatalf("%s: read: %v", st.name, err)
		}
		if got := strings.Count(out.String(), "member reachable again"); got != st.wantLines || pl.isDown(addr) != st.wantDown {
			t.Fatalf("%s: %d lines, down %v; want %d, %v: %q", st.name, got, pl.isDown(addr), st.wantLines, st.wantDown, out.String())
		}
	}
}

// TestClusterUnreachableMemberLogsOnce: with one follower of three
// stopped, the leader logs one line about it, not one per retry, and one
// line when it is back.
func TestClusterUnreachableMemberLogsOnce(t *testing.T) {
	logger, logs := testutil.CaptureLogger(t, slog.LevelInfo)
	c := newTestClusterWith(t, 3, func(cfg *Config) {
		cfg.Logger = logger.With("self", cfg.ServerID)
	})
	lead := c.leader()
	down := (lead + 1) % 3
	self := fmt.Sprintf("self=%d", lead+1)
	about := func(line string) bool {
		return strings.Contains(line, c.peers[down].RaftAddr) || strings.Contains(line, fmt.Sprintf("server-id=%d", down+1))
	}
	complaints := func() int {
		n := 0
		for _, l := range logs.Lines(self, "component=raft") {
			if (strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN")) && about(l) {
				n++
			}
		}
		return n
	}
	before := complaints() // lines while the ensemble formed
	c.nodes[down].Close()
	c.nodes[down] = nil
	// The leader keeps writing, so it retries appends as well as heartbeats.
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		await(t, c.nodes[lead].Submit(createTxn(fmt.Sprintf("/w%d", i))))
		time.Sleep(50 * time.Millisecond)
	}
	if n := complaints() - before; n != 1 {
		t.Fatalf("the leader logged %d lines about the stopped member in 3 s, want 1:\n%s", n, strings.Join(logs.Lines(self, "component=raft"), "\n"))
	}
	c.start(down)
	back := fmt.Sprintf("member=%d", down+1)
	testutil.Eventually(t, 15*time.Second, "the leader logs that the member reachable again", func() bool {
		return len(logs.Lines(self, "member reachable again", back)) == 1
	})
	if l := logs.Lines(self, "member reachable again")[0]; !strings.Contains(l, "suppressed=") {
		t.Fatalf("the line %q has no count of suppressed lines", l)
	}
}
