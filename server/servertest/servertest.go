// Package servertest starts in-process zkserverd servers for tests of other
// packages: on loopback, on a port the kernel picks, stopped when the test
// ends.
package servertest

import (
	"context"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
)

// Config returns a standalone configuration on 127.0.0.1 with a port the
// kernel picks, its data in dataDir, no per-address connection limit, every
// four-letter word enabled, and the AdminServer on a free port.
func Config(dataDir string) conf.Config {
	cfg := conf.Default()
	cfg.DataDir, cfg.DataLogDir = dataDir, dataDir
	cfg.ClientPortAddress = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.MaxClientCnxns = 0
	cfg.FourLetterWordWhitelist = []string{"*"}
	cfg.AdminServerPort = 0
	return cfg
}

// Start runs a server with opts until the test ends; it fails the test if
// the server does not start within 30 seconds. Without opts.Operator the
// server gets the operator surfaces of package ops (four-letter words,
// AdminServer, /metrics, audit log) with a registry of its own.
func Start(t testing.TB, opts server.Options) *server.Server {
	t.Helper()
	if opts.Operator == nil {
		opts.Operator = ops.New(ops.Options{})
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		srv.Close()
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}
