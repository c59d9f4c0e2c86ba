package procgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ignoreTerm ignores SIGTERM (as do the children it starts), says so,
// and idles.
const ignoreTerm = `trap "" TERM; echo ready; while :; do sleep 0.1; done`

// termHandler exits 0 on SIGTERM, saying so; a stopped shell runs the
// handler only once it is continued.
const termHandler = `trap 'echo term; exit 0' TERM; echo ready; while :; do sleep 0.1; done`

func TestProcess(t *testing.T) {
	cases := []struct {
		name  string
		argv  []string
		opts  Options
		input string // written to stdin, which is then closed (with opts.Stdin)
		wait  string // the log holds this before act
		act   func(p *Process)
		// what is expected after act
		wantLog     []string
		wantWaitErr bool
		within      time.Duration // act returned within this
		after       time.Duration // and not before this
	}{
		{name: "stop ends a process that honours SIGTERM", argv: []string{"sleep", "30"},
			act: func(p *Process) { p.Stop(5 * time.Second) }, wantWaitErr: true, within: 4 * time.Second},
		{name: "kill", argv: []string{"sleep", "30"},
			act: func(p *Process) { p.Kill() }, wantWaitErr: true, within: 4 * time.Second},
		{name: "stop kills after the grace what ignores SIGTERM", argv: []string{"sh", "-c", ignoreTerm}, wait: "ready",
			act: func(p *Process) { p.Stop(500 * time.Millisecond) }, wantWaitErr: true,
			after: 500 * time.Millisecond, within: 5 * time.Second},
		{name: "stop sends SIGCONT to a stopped group", argv: []string{"sh", "-c", termHandler}, wait: "ready",
			act: func(p *Process) {
				p.Signal(syscall.SIGSTOP)
				p.Stop(10 * time.Second)
			}, wantLog: []string{"term\n"}, within: 5 * time.Second},
		{name: "stdout and stderr appended to the log", argv: []string{"sh", "-c", "echo out; echo err >&2"},
			act: func(p *Process) { p.Wait() }, wantLog: []string{"before\n", "out\n", "err\n"}, within: 5 * time.Second},
		{name: "dir and env", argv: []string{"sh", "-c", `echo "$PROCGROUP_TEST $(pwd)"`},
			opts: Options{Dir: "/", Env: []string{"PROCGROUP_TEST=seen"}},
			act:  func(p *Process) { p.Wait() }, wantLog: []string{"seen /\n"}, within: 5 * time.Second},
		{name: "stdin pipe", argv: []string{"cat"}, opts: Options{Stdin: true}, input: "through stdin\n",
			act: func(p *Process) { p.Wait() }, wantLog: []string{"through stdin\n"}, within: 5 * time.Second},
		{name: "exit status", argv: []string{"sh", "-c", "exit 3"},
			act: func(p *Process) { p.Wait() }, wantWaitErr: true, within: 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "out.log")
			if err := os.WriteFile(log, []byte("before\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.opts.Log = log
			p, err := Start(tc.argv, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Kill)
			if tc.opts.Stdin {
				if _, err := p.Stdin().Write([]byte(tc.input)); err != nil {
					t.Fatal(err)
				}
				p.Stdin().Close()
			}
			waitLog(t, log, tc.wait)
			start := time.Now()
			tc.act(p)
			took := time.Since(start)
			if !p.Exited() {
				t.Fatalf("not exited after act")
			}
			if took < tc.after || took > tc.within {
				t.Errorf("act took %v, want between %v and %v", took, tc.after, tc.within)
			}
			if err := p.Wait(); (err != nil) != tc.wantWaitErr {
				t.Errorf("Wait() = %v, want an error: %v", err, tc.wantWaitErr)
			}
			if err := p.Signal(syscall.SIGTERM); !errors.Is(err, ErrExited) {
				t.Errorf("Signal after the exit = %v, want ErrExited", err)
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), "before\n") {
				t.Errorf("log %q lost what it held before", b)
			}
			for _, w := range tc.wantLog {
				if !strings.Contains(string(b), w) {
					t.Errorf("log %q lacks %q", b, w)
				}
			}
		})
	}
}

// TestKillReachesTheGroup checks that a child of the process dies with
// it.
func TestKillReachesTheGroup(t *testing.T) {
	log := filepath.Join(t.TempDir(), "out.log")
	p, err := Start([]string{"sh", "-c", "sleep 30 & echo started; wait"}, Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	waitLog(t, log, "started")
	pgid := p.cmd.Process.Pid
	p.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has members 10 s after Kill", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartFails(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		argv []string
		log  string
	}{
		{"empty command line", nil, filepath.Join(dir, "a.log")},
		{"no such program", []string{filepath.Join(dir, "missing")}, filepath.Join(dir, "b.log")},
		{"log not writable", []string{"true"}, filepath.Join(dir, "no", "such", "dir.log")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := Start(tc.argv, Options{Log: tc.log}); err == nil {
				p.Kill()
				t.Fatal("Start succeeded")
			}
		})
	}
}

// waitLog waits (at most 10 s) until the log at path holds s.
func waitLog(t *testing.T, path, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s lacks %q after 10 s: %q", path, s, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
