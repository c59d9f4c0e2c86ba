// Package testutil holds the fixtures that tests of several packages share:
// a standalone server configuration on loopback, a polling wait, a
// four-letter-word client, a go-zookeeper session and a read of its whole
// tree, and a logger that writes through the test's log. It imports
// nothing of the project but conf and internal/fourletter, so the tests of
// package server itself can use it; server/servertest starts servers on
// top of it and test/ports picks ports written into configurations. Only
// tests import it.
package testutil

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/fourletter"
)

// Config returns a standalone configuration on 127.0.0.1 with its data in
// dataDir: the client port and the AdminServer's on ports the kernel picks
// (many servers run side by side), no per-address connection limit, and
// every four-letter word enabled.
func Config(dataDir string) conf.Config {
	cfg := conf.Default()
	cfg.DataDir, cfg.DataLogDir = dataDir, dataDir
	cfg.ClientPortAddress = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.MaxClientCnxns = 0
	cfg.FourLetterWordWhitelist = []string{"*"}
	cfg.AdminServerAddress = "127.0.0.1"
	cfg.AdminServerPort = 0
	return cfg
}

// pollInterval is how often Eventually checks its condition.
const pollInterval = 10 * time.Millisecond

// Eventually checks cond every 10 ms until it holds, and fails the test
// when d passes first; what names the awaited state in the failure.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(pollInterval)
	}
}

// FourLetter sends a four-letter word to addr and returns the whole reply,
// read until the server closes the connection (fourletter.Ask: at most 5 s).
func FourLetter(addr, word string) (string, error) { return fourletter.Ask(addr, word) }

// Serve listens on a loopback port and hands every connection to handle,
// each on its own goroutine, until the test ends; it returns the address.
func Serve(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln.Addr().String()
}

// FourLetterServer answers one connection on a loopback port with reply
// once it has read the four-letter word, then closes it; it returns the
// address. The listener is closed when the test ends.
func FourLetterServer(t testing.TB, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if c.SetDeadline(time.Now().Add(5*time.Second)) != nil {
			return
		}
		if _, err := io.ReadFull(c, make([]byte, 4)); err == nil {
			c.Write([]byte(reply))
		}
	}()
	return ln.Addr().String()
}

// FourLetterLine returns the rest of the first line of word's reply that
// starts with prefix, or "" when there is none or addr does not answer.
func FourLetterLine(addr, word, prefix string) string {
	out, _ := FourLetter(addr, word)
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	return ""
}

// FourLetterNumber returns the number (in base) that follows prefix on a
// line of word's reply, such as srvr's "Zxid: 0x" (base 16) or mntr's
// "zk_watch_count\t" (base 10); it fails the test when there is none.
func FourLetterNumber(t testing.TB, addr, word, prefix string, base int) int64 {
	t.Helper()
	out, err := FourLetter(addr, word)
	if err != nil {
		t.Fatalf("%s %s: %v", word, addr, err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseInt(v, base, 64)
			if err != nil {
				t.Fatalf("%s %s: %q after %q: %v", word, addr, v, prefix, err)
			}
			return n
		}
	}
	t.Fatalf("%s of %s has no line starting %q:\n%s", word, addr, prefix, out)
	return 0
}

// QuietLogger discards go-zookeeper's logs.
type QuietLogger struct{}

// Printf discards a log line.
func (QuietLogger) Printf(string, ...any) {}

// Connect opens a go-zookeeper session to addr with the given session
// timeout, closed when the test ends, and waits up to 10 s until it has a
// session; it returns the connection and its remaining events.
func Connect(t testing.TB, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, timeout, zk.WithLogger(QuietLogger{}))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	WaitState(t, events, zk.StateHasSession, 10*time.Second)
	return c, events
}

// WaitState waits up to d for a session event in state want.
func WaitState(t testing.TB, events <-chan zk.Event, want zk.State, d time.Duration) {
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

// Logger returns a logger that writes records of level and above through
// t.Log (shown on failure or with -v). Records logged after the test's
// cleanup has reached this logger are dropped: a closed member's
// goroutines may still log, and t.Log panics once the test has completed.
func Logger(t testing.TB, level slog.Level) *slog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// tWriter writes to t.Log until stopped; mu guards stopped.
type tWriter struct {
	t       testing.TB
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

// Server is what Start starts: a zkserverd server, or a test's wrapper of
// one.
type Server interface {
	Start(ctx context.Context) error
	Close() error
}

// Start starts s, allowing 30 s, fails the test if it does not start, and
// closes it when the test ends.
func Start(t testing.TB, s Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		s.Close()
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { s.Close() })
}

// LogCapture keeps the text of the log records a CaptureLogger wrote, for
// tests that check what was logged. mu guards buf.
type LogCapture struct {
	mu  sync.Mutex
	buf strings.Builder
}

// Write implements io.Writer.
func (c *LogCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// String returns everything captured.
func (c *LogCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// Lines returns the captured lines that contain every one of parts.
func (c *LogCapture) Lines(parts ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return MatchingLines(c.buf.String(), parts...)
}

// MatchingLines returns the non-empty lines of text that contain every one
// of parts.
func MatchingLines(text string, parts ...string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		match := line != ""
		for _, p := range parts {
			match = match && strings.Contains(line, p)
		}
		if match {
			out = append(out, line)
		}
	}
	return out
}

// CaptureLogger is Logger that also keeps the records' text in the
// returned LogCapture.
func CaptureLogger(t testing.TB, level slog.Level) (*slog.Logger, *LogCapture) {
	w := &tWriter{t: t}
	t.Cleanup(w.stop)
	c := &LogCapture{}
	return slog.New(slog.NewTextHandler(io.MultiWriter(w, c), &slog.HandlerOptions{Level: level})), c
}
