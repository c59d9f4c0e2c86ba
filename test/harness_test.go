package test

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
	"github.com/zkserverd/zkserverd/test/ports"
)

// testConfig is a standalone loopback configuration (testutil.Config) with
// a short tick, so session timeouts are short.
func testConfig(t *testing.T, dataDir string) conf.Config {
	t.Helper()
	cfg := testutil.Config(dataDir)
	cfg.TickTime = 100
	cfg.SessionlessCnxnTimeout = 2000
	return cfg
}

// startServer runs an in-process server and stops it when the test ends.
func startServer(t *testing.T, cfg conf.Config) *server.Server {
	t.Helper()
	return servertest.Start(t, server.Options{Config: cfg, Logger: testutil.Logger(t, slog.LevelInfo)})
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
	testutil.Eventually(t, 20*time.Second, "server answering ruok", func() bool {
		out, err := testutil.FourLetter(p.addr, "ruok")
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
