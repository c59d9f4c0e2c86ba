package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
)

// opsConfig is a standalone configuration on loopback with every port
// picked by the system (the operator surfaces are package ops's; a server
// of this package's tests has none).
func opsConfig(t *testing.T) conf.Config {
	t.Helper()
	cfg := conf.Default()
	cfg.DataDir = t.TempDir()
	cfg.DataLogDir = cfg.DataDir
	cfg.ClientPortAddress = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.MaxClientCnxns = 0
	cfg.AdminServerAddress = "127.0.0.1"
	cfg.AdminServerPort = 0
	return cfg
}

// opsTestWriter routes server logs through t.Log.
type opsTestWriter struct{ t *testing.T }

func (w opsTestWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startOpsServer starts a server (in memory unless onDisk) and closes it
// when the test ends.
func startOpsServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(opsTestWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		s.Close()
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type quietZKLogger struct{}

func (quietZKLogger) Printf(string, ...any) {}

// opsClient opens a go-zookeeper session to s.
func opsClient(t *testing.T, s *Server) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(quietZKLogger{}))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-deadline:
			t.Fatal("no session within 10s")
		}
	}
}
