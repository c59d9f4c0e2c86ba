// Package servertest starts in-process zkserverd servers, with the operator
// surfaces of package ops, for tests of other packages; stopped when the
// test ends. Their configuration is internal/testutil's Config.
package servertest

import (
	"context"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
)

// Start runs a server with opts (and seams, as server.New takes them) until
// the test ends; it fails the test if the server does not start within 30
// seconds. Without opts.Operator the server gets the operator surfaces of
// package ops (four-letter words, AdminServer, /metrics, audit log) with a
// registry of its own.
func Start(t testing.TB, opts server.Options, seams ...server.Option) *server.Server {
	t.Helper()
	if opts.Operator == nil {
		opts.Operator = ops.New(ops.Options{})
	}
	srv, err := server.New(opts, seams...)
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
