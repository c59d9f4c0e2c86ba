package server

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestWriteDeadlineMovesWhenHalfUsed checks when a write moves the socket's
// deadline: only once less than half of writeTimeout is left.
func TestWriteDeadlineMovesWhenHalfUsed(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	o := newOutbox(1 << 20)
	o.nc, o.writeTimeout = a, time.Second
	t0 := time.Now()
	steps := []struct {
		at   time.Duration
		want time.Duration // deadline after the step, from t0
	}{
		{0, time.Second},
		{100 * time.Millisecond, time.Second},
		{499 * time.Millisecond, time.Second},
		{501 * time.Millisecond, 1501 * time.Millisecond},
		{900 * time.Millisecond, 1501 * time.Millisecond},
		{1100 * time.Millisecond, 2100 * time.Millisecond},
	}
	for _, s := range steps {
		o.extendDeadline(t0.Add(s.at))
		if got := o.deadline.Sub(t0); got != s.want {
			t.Fatalf("write at %v: deadline %v after start, want %v", s.at, got, s.want)
		}
	}
}

// TestStuckWriteFails checks that a write the peer never reads fails
// within writeTimeout instead of blocking the writer.
func TestStuckWriteFails(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	o := newOutbox(1 << 20)
	o.nc, o.writeTimeout, o.sent = a, 100*time.Millisecond, func([][]byte) {}
	done := make(chan error, 1)
	go func() { done <- o.write([][]byte{make([]byte, 10)}) }()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("stuck write: %v, want a deadline error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write nobody reads did not fail within 5s")
	}
}
