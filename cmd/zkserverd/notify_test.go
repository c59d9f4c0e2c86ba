package main

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServing is a servingState the test flips.
type fakeServing struct{ serving atomic.Bool }

func (f *fakeServing) Serving() bool { return f.serving.Load() }
func (f *fakeServing) Mode() string  { return "follower" }

// notifySocket listens on a unix datagram socket as systemd does and
// returns its name for $NOTIFY_SOCKET and the connection.
func notifySocket(t *testing.T, abstract bool) (string, *net.UnixConn) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "notify")
	env := name
	if abstract {
		env = "@zkserverd-test-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + filepath.Base(t.TempDir())
		name = "\x00" + env[1:]
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return env, c
}

// next reads one message, failing after 5 s.
func next(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 1024)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no message from the server: %v", err)
	}
	return string(buf[:n])
}

// TestNotifyServing: READY=1 once, when the server first serves; STATUS
// whenever that changes; nothing without $NOTIFY_SOCKET.
func TestNotifyServing(t *testing.T) {
	for _, abstract := range []bool{false, true} {
		t.Run(map[bool]string{false: "path", true: "abstract"}[abstract], func(t *testing.T) {
			env, sock := notifySocket(t, abstract)
			state := &fakeServing{}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				notifyServing(ctx, newNotifier(env), state, time.Millisecond, slog.New(slog.DiscardHandler))
			}()
			steps := []struct {
				serving bool
				want    string
			}{
				{false, "STATUS=not serving: no quorum, or catching up, or fenced"},
				{true, "READY=1\nSTATUS=serving as follower"},
				{false, "STATUS=not serving: no quorum, or catching up, or fenced"},
				{true, "STATUS=serving as follower"}, // READY only once
			}
			for _, s := range steps {
				state.serving.Store(s.serving)
				if got := next(t, sock); got != s.want {
					t.Fatalf("message %q, want %q", got, s.want)
				}
			}
			cancel()
			<-done
			if err := newNotifier(env).send("STOPPING=1"); err != nil || next(t, sock) != "STOPPING=1" {
				t.Fatalf("STOPPING=1: %v", err)
			}
		})
	}
	// Without a socket nothing is sent and nothing fails.
	var n *notifier = newNotifier("")
	if n != nil || n.send("READY=1") != nil {
		t.Fatal("a notifier without $NOTIFY_SOCKET")
	}
	notifyServing(context.Background(), nil, &fakeServing{}, time.Millisecond, nil)
}
