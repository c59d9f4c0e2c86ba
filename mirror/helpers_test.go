package mirror

import (
	"bufio"
	"io"
	"log/slog"
	"testing"

	"github.com/zkserverd/zkserverd/internal/zkimport"
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

// beUint64 decodes a big-endian uint64.
func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}

// readEntries calls fn with each entry of a log stream.
func readEntries(r io.Reader, fn func([]byte)) error {
	return zkimport.ReadLogEntries(r, "log", func(e []byte) error {
		fn(e)
		return nil
	})
}
