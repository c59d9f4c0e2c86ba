package mirror

import (
	"bufio"
	"log/slog"
	"testing"
)

// handler is package zab's Handler, which State must satisfy without
// importing zab.
type handler interface {
	LastZxid() int64
	Snapshot(zxid int64, r *bufio.Reader) error
	Truncate(zxid int64) error
	Txn(zxid int64, data []byte) error
	UpToDate()
}

var _ handler = (*State)(nil)

// testWriter sends log lines to t.Log (shown only on failure or -v).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// testLogger is a logger that writes through t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
