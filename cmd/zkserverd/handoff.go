package main

import (
	"log/slog"
	"net"
	"strconv"
	"sync"

	"github.com/zkserverd/zkserverd/server"
)

// handoffListener is a serving mirror's client port, lent to one server
// after another: first to the mirror's own, then, at a takeover, to the
// zkserverd member the mirror becomes. The socket stays open from the
// mirror's start to the member's end, so a client that connects while the
// port changes hands, or while the mirror is frozen, is neither refused
// nor closed on: its connection waits, accepted, until a server takes it
// (the member holds its handshake until it serves). Without this, each
// client that tried the port then would pay another of its reconnection
// back-offs (up to a second each in the Java client) before it tried the
// next host.
//
// One goroutine accepts from the socket and hands each connection to the
// current lease, waiting while there is none or the port is held. mu
// guards current, held and changed.
type handoffListener struct {
	ln  net.Listener
	log *slog.Logger

	mu      sync.Mutex
	current *lease        // the lease connections go to; nil: none
	held    bool          // connections wait even when there is a lease
	changed chan struct{} // closed and replaced when current or held changes

	closeOnce  sync.Once
	done       chan struct{} // closed by Close
	acceptDone chan struct{} // closed when acceptLoop returns
}

// newHandoffListener starts handing out ln's connections; it owns ln.
func newHandoffListener(ln net.Listener, logger *slog.Logger) *handoffListener {
	h := &handoffListener{ln: ln, log: logger, changed: make(chan struct{}),
		done: make(chan struct{}), acceptDone: make(chan struct{})}
	go h.acceptLoop()
	return h
}

// lend returns a listener the port's connections go to from now on, in
// place of any earlier lease; it also ends a hold. Closing the lease does
// not close the port.
func (h *handoffListener) lend() net.Listener {
	l := &lease{h: h, conns: make(chan net.Conn), closed: make(chan struct{})}
	h.mu.Lock()
	h.current, h.held = l, false
	h.notifyLocked()
	h.mu.Unlock()
	return l
}

// hold makes new connections wait (on) or go to the current lease again
// (off).
func (h *handoffListener) hold(on bool) {
	h.mu.Lock()
	h.held = on
	h.notifyLocked()
	h.mu.Unlock()
}

// release stops handing connections to l if it is the current lease.
func (h *handoffListener) release(l *lease) {
	h.mu.Lock()
	if h.current == l {
		h.current = nil
		h.notifyLocked()
	}
	h.mu.Unlock()
}

// notifyLocked wakes a delivery waiting for a change; mu is held.
func (h *handoffListener) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// listensOn reports whether the port is the one a server configured to
// listen on addr (host:port, "" host: every interface) would bind.
func (h *handoffListener) listensOn(addr string) bool {
	have, ok := h.ln.Addr().(*net.TCPAddr)
	if !ok {
		return false
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port != have.Port {
		return false
	}
	everywhere := have.IP == nil || have.IP.IsUnspecified()
	if host == "" {
		return everywhere
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return false
	}
	for _, ip := range ips {
		if ip.Equal(have.IP) || (ip.IsUnspecified() && everywhere) {
			return true
		}
	}
	return false
}

// Close closes the port: connections waiting for a lease are closed.
func (h *handoffListener) Close() error {
	var err error
	h.closeOnce.Do(func() {
		close(h.done)
		err = h.ln.Close()
		<-h.acceptDone
	})
	return err
}

// acceptLoop accepts until the port closes (server.AcceptEach).
func (h *handoffListener) acceptLoop() {
	defer close(h.acceptDone)
	server.AcceptEach(h.ln, h.log, func(nc net.Conn) bool {
		if !h.deliver(nc) {
			nc.Close()
			return false
		}
		return true
	})
}

// deliver hands nc to the current lease, waiting while there is none or
// the port is held; false when the port closed first.
func (h *handoffListener) deliver(nc net.Conn) bool {
	for {
		h.mu.Lock()
		l, changed := h.current, h.changed
		if h.held {
			l = nil
		}
		h.mu.Unlock()
		var to chan net.Conn // nil: no lease to send to, wait for a change
		if l != nil {
			to = l.conns
		}
		select {
		case to <- nc:
			return true
		case <-changed:
		case <-h.done:
			return false
		}
	}
}

// lease is one server's view of a handoffListener (net.Listener).
type lease struct {
	h      *handoffListener
	conns  chan net.Conn
	once   sync.Once
	closed chan struct{}
}

// Accept returns the next connection handed to this lease.
func (l *lease) Accept() (net.Conn, error) {
	select {
	case nc := <-l.conns:
		return nc, nil
	case <-l.closed:
	case <-l.h.done:
	}
	return nil, net.ErrClosed
}

// Close ends the lease; the port stays open.
func (l *lease) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.h.release(l)
	})
	return nil
}

// Addr is the port's address.
func (l *lease) Addr() net.Addr { return l.h.ln.Addr() }
