package server

import (
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
)

// opsConfig is testutil's standalone loopback configuration in a fresh
// directory (the operator surfaces are package ops's; a server of this
// package's tests has none), with forceSync=no: these tests are about the
// protocol, and their data need not outlive a crash.
func opsConfig(t *testing.T) conf.Config {
	t.Helper()
	cfg := testutil.Config(t.TempDir())
	cfg.ForceSync = false
	return cfg
}

// startOpsServer starts a server and closes it when the test ends; without
// opts.Logger, warnings and errors go to t.Log.
func startOpsServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testutil.Logger(t, slog.LevelWarn)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	testutil.Start(t, s)
	return s
}

// opsClient opens a go-zookeeper session to s.
func opsClient(t *testing.T, s *Server) *zk.Conn {
	t.Helper()
	c, _ := testutil.Connect(t, s.Addr().String(), 10*time.Second)
	return c
}
