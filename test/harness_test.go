package test

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
	"github.com/zkserverd/zkserverd/test/ports"
)

// testConfig is a standalone configuration on a free loopback port with a
// short tick, so session timeouts are short.
func testConfig(t *testing.T, dataDir string) conf.Config {
	t.Helper()
	cfg := conf.Default()
	cfg.DataDir = dataDir
	cfg.DataLogDir = dataDir
	cfg.ClientPortAddress = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.TickTime = 100
	cfg.MaxClientCnxns = 0
	cfg.FourLetterWordWhitelist = []string{"*"}
	cfg.SessionlessCnxnTimeout = 2000
	cfg.AdminServerPort = 0 // a free port: many servers run side by side
	return cfg
}

// testLogger routes server logs through t.Log (shown on failure or -v).
// Logs written once the test's cleanup has passed this logger are dropped:
// a closed member's raft transport may still log about a connection a
// proxy closes later, and t.Log panics after the test has completed.
func testLogger(t *testing.T) *slog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// tWriter writes to t.Log until stopped; mu guards stopped.
type tWriter struct {
	t       *testing.T
	mu      sync.Mutex
	stopped bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *tWriter) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

// startServer runs an in-process server and stops it when the test ends.
func startServer(t *testing.T, cfg conf.Config) *server.Server {
	t.Helper()
	return servertest.Start(t, server.Options{Config: cfg, Logger: testLogger(t)})
}

// connect opens a go-zookeeper session and waits until it has a session.
func connect(t *testing.T, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, timeout, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	waitState(t, events, zk.StateHasSession, 10*time.Second)
	return c, events
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...interface{}) {}

// waitState waits for a session event in the given state.
func waitState(t *testing.T, events <-chan zk.Event, want zk.State, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v event within %v", want, d)
		}
	}
}

// eventually polls cond every 20ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// zkBinary builds cmd/zkserverd once per test run.
func zkBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zkserverd-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "zkserverd")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/zkserverd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// freePort returns a loopback port that is free now, from this package's
// band (package ports): ensembles pick all their ports before binding any.
func freePort(t *testing.T) int {
	t.Helper()
	return portPicker.Free(t)
}

var portPicker = ports.ForIntegration()

// process is a zkserverd child process.
type process struct {
	cmd  *exec.Cmd
	addr string
	log  *strings.Builder
}

// startProcess runs the built binary with a zoo.cfg in dir and waits until
// it answers ruok.
func startProcess(t *testing.T, dir string, port int, extraConfig ...string) *process {
	t.Helper()
	cfgPath := filepath.Join(dir, "zoo.cfg")
	cfgText := fmt.Sprintf("tickTime=200\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.serverPort=0\n", filepath.Join(dir, "data"), port)
	for _, line := range extraConfig {
		cfgText += line + "\n"
	}
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cmd := exec.Command(zkBinary(t), "--config", cfgPath)
	cmd.Stdout = &syncWriter{b: &log}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, addr: fmt.Sprintf("127.0.0.1:%d", port), log: &log}
	t.Cleanup(func() { p.kill() })
	eventually(t, 20*time.Second, "server answering ruok", func() bool {
		out, err := fourLetter(p.addr, "ruok")
		return err == nil && out == "imok"
	})
	return p
}

func (p *process) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// fourLetter sends a four-letter word and returns the whole reply.
func fourLetter(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String(), nil
		}
	}
}
