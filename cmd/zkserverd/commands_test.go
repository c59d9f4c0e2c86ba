package main

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server"
)

func TestLocalAddr(t *testing.T) {
	cases := map[string]string{":2181": "127.0.0.1:2181", "0.0.0.0:2181": "127.0.0.1:2181",
		"[::]:2181": "127.0.0.1:2181", "10.1.2.3:2181": "10.1.2.3:2181"}
	for in, want := range cases {
		if got := localAddr(in); got != want {
			t.Errorf("localAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProbeMode(t *testing.T) {
	if mode, err := probeMode(testutil.FourLetterServer(t, "Zookeeper version: x\nMode: follower\nNode count: 5\n"), time.Second); err != nil || mode != "follower" {
		t.Fatalf("serving follower: %q %v", mode, err)
	}
	if _, err := probeMode(testutil.FourLetterServer(t, "This ZooKeeper instance is not currently serving requests\n"), time.Second); err == nil {
		t.Fatal("a server without quorum passed the health check")
	}
}

// TestVersionCommand: `zkserverd version` and `zkserverd --version` print
// the same line: the version srvr reports, the commit and the build date.
func TestVersionCommand(t *testing.T) {
	run := func(args ...string) string {
		var out bytes.Buffer
		cmd := newRootCommand(&out, &out)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String()
	}
	got := run("version")
	want := "zkserverd " + server.Version + ", commit " + buildCommit() + ", built on " + server.BuildDate + " ("
	if !strings.HasPrefix(got, want) || !strings.HasPrefix(got, "zkserverd 3.8.0") || !strings.HasSuffix(got, ")\n") {
		t.Fatalf("version printed %q, want %q...", got, want)
	}
	if flag := run("--version"); flag != got {
		t.Fatalf("--version printed %q, version %q", flag, got)
	}
}

// TestBuildCommit: a commit stamped at link time wins over the build
// information.
func TestBuildCommit(t *testing.T) {
	if buildCommit() == "" {
		t.Fatal("empty commit")
	}
	defer func(c string) { commit = c }(commit)
	commit = "0123abc"
	if got := buildCommit(); got != "0123abc" {
		t.Fatalf("buildCommit = %q with commit stamped", got)
	}
}

func TestInvalidConfigNamesTheKey(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/zoo.cfg"
	if err := writeFile(path, "dataDir="+dir+"\ntickTime=abc\n"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := newRootCommand(&out, &out)
	cmd.SetArgs([]string{"--config", path})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "tickTime") {
		t.Fatalf("bad tickTime: %v", err)
	}
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o600) }

// TestDataDirFlag: --data-dir replaces the configuration's dataDir (a file
// then need not set one), and the log directory with it unless it was set
// on its own; before, with a file or JVM flags, the log stayed behind in
// the old directory.
func TestDataDirFlag(t *testing.T) {
	dir := t.TempDir()
	withDir, withLog, without := dir+"/with.cfg", dir+"/log.cfg", dir+"/without.cfg"
	for path, text := range map[string]string{withDir: "dataDir=/a\n", withLog: "dataDir=/a\ndataLogDir=/log\n", without: "tickTime=2000\n"} {
		if err := writeFile(path, text); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		args            []string
		jvmFlags        string
		wantDir, wantLg string
	}{
		{[]string{"--config", withDir, "--data-dir", "/b"}, "", "/b", "/b"},
		{[]string{"--config", without, "--data-dir", "/b"}, "", "/b", "/b"},
		{[]string{"--config", withLog, "--data-dir", "/b"}, "", "/b", "/log"},
		{[]string{"--data-dir", "/b"}, "", "/b", "/b"},
		{[]string{"--data-dir", "/b"}, "-Dzookeeper.snapCount=1000", "/b", "/b"},
		{[]string{"--config", withDir, "--data-dir", "/b", "--data-log-dir", "/l"}, "", "/b", "/l"},
		{[]string{"--config", withDir}, "", "/a", "/a"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " ")+" "+tc.jvmFlags, func(t *testing.T) {
			for _, v := range []string{"ZOO_DATA_DIR", "ZOO_SERVERS", "ZOO_CFG_EXTRA", "JVMFLAGS"} {
				t.Setenv(v, "")
			}
			t.Setenv("SERVER_JVMFLAGS", tc.jvmFlags)
			var f runFlags
			cmd := &cobra.Command{}
			addRunFlags(cmd, &f)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := loadConfig(cmd, f, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.DataDir != tc.wantDir || cfg.DataLogDir != tc.wantLg {
				t.Errorf("dataDir %q, dataLogDir %q; want %q, %q", cfg.DataDir, cfg.DataLogDir, tc.wantDir, tc.wantLg)
			}
		})
	}
}
