package main

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"
)

// newTestHandoff opens a handoff listener on a free loopback port.
func newTestHandoff(t *testing.T) *handoffListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := newHandoffListener(ln, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { h.Close() })
	return h
}

// dialAndSend connects to the port and sends one byte, which tells the
// accepted connections apart.
func dialAndSend(t *testing.T, h *handoffListener, b byte) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", h.ln.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte{b}); err != nil {
		t.Fatal(err)
	}
	return c
}

// acceptResult is one Accept's outcome.
type acceptResult struct {
	b   byte
	err error
}

// acceptAsync accepts one connection from ln in the background and reads
// its byte.
func acceptAsync(ln net.Listener) <-chan acceptResult {
	out := make(chan acceptResult, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			out <- acceptResult{err: err}
			return
		}
		defer nc.Close()
		nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		var b [1]byte
		_, err = io.ReadFull(nc, b[:])
		out <- acceptResult{b: b[0], err: err}
	}()
	return out
}

// expectAccept waits for an accepted connection carrying byte want.
func expectAccept(t *testing.T, got <-chan acceptResult, want byte) {
	t.Helper()
	select {
	case r := <-got:
		if r.err != nil || r.b != want {
			t.Fatalf("accepted %d (err %v), want %d", r.b, r.err, want)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("no connection accepted within 3s, want %d", want)
	}
}

// expectNoAccept checks that nothing is accepted for a while.
func expectNoAccept(t *testing.T, got <-chan acceptResult) {
	t.Helper()
	select {
	case r := <-got:
		t.Fatalf("accepted %d (err %v) while connections should wait", r.b, r.err)
	case <-time.After(150 * time.Millisecond):
	}
}

func TestHandoffDeliversToTheCurrentLease(t *testing.T) {
	h := newTestHandoff(t)
	first := h.lend()
	dialAndSend(t, h, 1)
	expectAccept(t, acceptAsync(first), 1)

	// Between leases a client's connection waits, accepted, for the next.
	first.Close()
	if _, err := first.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed lease: %v, want net.ErrClosed", err)
	}
	dialAndSend(t, h, 2)
	time.Sleep(50 * time.Millisecond)
	second := h.lend()
	expectAccept(t, acceptAsync(second), 2)
	if second.Addr().String() != h.ln.Addr().String() {
		t.Fatalf("lease address %s, want the port's %s", second.Addr(), h.ln.Addr())
	}
}

func TestHandoffHold(t *testing.T) {
	h := newTestHandoff(t)
	l := h.lend()
	h.hold(true)
	got := acceptAsync(l)
	dialAndSend(t, h, 7)
	expectNoAccept(t, got)
	h.hold(false)
	expectAccept(t, got, 7)

	// A new lease ends a hold.
	h.hold(true)
	l.Close()
	next := h.lend()
	dialAndSend(t, h, 8)
	expectAccept(t, acceptAsync(next), 8)
}

func TestHandoffCloseEndsLeasesAndPort(t *testing.T) {
	h := newTestHandoff(t)
	l := h.lend()
	addr := h.ln.Addr().String()
	got := acceptAsync(l)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if !errors.Is(r.err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v, want net.ErrClosed", r.err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Accept did not return after Close")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts after Close", addr)
	}
}

func TestHandoffListensOn(t *testing.T) {
	h := newTestHandoff(t)
	port := h.ln.Addr().(*net.TCPAddr).Port
	other := port + 1
	if other > 65535 {
		other = port - 1
	}
	all, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	hAll := newHandoffListener(all, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { hAll.Close() })
	allPort := all.Addr().(*net.TCPAddr).Port
	tests := []struct {
		name string
		h    *handoffListener
		addr string
		want bool
	}{
		{"same address", h, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), true},
		{"same port by name", h, net.JoinHostPort("localhost", strconv.Itoa(port)), true},
		{"other port", h, net.JoinHostPort("127.0.0.1", strconv.Itoa(other)), false},
		{"every interface, loopback port", h, net.JoinHostPort("", strconv.Itoa(port)), false},
		{"every interface", hAll, net.JoinHostPort("", strconv.Itoa(allPort)), true},
		{"0.0.0.0", hAll, net.JoinHostPort("0.0.0.0", strconv.Itoa(allPort)), true},
		{"one interface of an every-interface port", hAll, net.JoinHostPort("127.0.0.1", strconv.Itoa(allPort)), false},
		{"no port", h, "127.0.0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.listensOn(tt.addr); got != tt.want {
				t.Fatalf("listensOn(%q) = %v, want %v (port %s)", tt.addr, got, tt.want, tt.h.ln.Addr())
			}
		})
	}
}
