package peernet

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/tlsconf"
)

// maxHandshakes bounds the connections in their handshake at once; more
// are closed at once (a member opens a few connections per port).
const maxHandshakes = 64

// listener runs each accepted connection's handshake on its own
// goroutine, under the network's handshake timeout, and hands over only
// the connections that pass. mu guards shaking and closed.
type listener struct {
	inner net.Listener
	n     *Network
	ready chan net.Conn
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	mu      sync.Mutex
	shaking map[net.Conn]struct{}
	closed  bool
}

func newListener(inner net.Listener, n *Network) *listener {
	l := &listener{inner: inner, n: n, ready: make(chan net.Conn), done: make(chan struct{}),
		shaking: make(map[net.Conn]struct{})}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// acceptLoop accepts until the listener closes, backing off briefly after
// other errors (too many open files).
func (l *listener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.n.log.Warn("member port: accept failed", "addr", l.inner.Addr().String(), "err", err)
			select {
			case <-l.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if !l.track(c) {
			c.Close()
			continue
		}
		l.wg.Add(1)
		go l.handshake(c)
	}
}

// track registers a connection entering its handshake; false means the
// listener closed or too many are in progress.
func (l *listener) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	if len(l.shaking) >= maxHandshakes {
		l.n.log.Warn("member port: too many connections in their handshake; closing one", "peer", c.RemoteAddr().String())
		return false
	}
	l.shaking[c] = struct{}{}
	return true
}

func (l *listener) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.shaking, c)
	l.mu.Unlock()
}

// handshake vets one connection and hands it to Accept.
func (l *listener) handshake(c net.Conn) {
	defer l.wg.Done()
	defer l.untrack(c)
	c.SetDeadline(time.Now().Add(l.n.timeout))
	up, err := l.n.acceptHandshake(c)
	if err != nil {
		c.Close()
		if !errors.Is(err, io.EOF) {
			l.n.logRefusal("refused a member connection", "accept "+hostOf(c.RemoteAddr()), c.RemoteAddr().String(), err)
		}
		return
	}
	up.SetDeadline(time.Time{})
	select {
	case l.ready <- up:
	case <-l.done:
		up.Close()
	}
}

// Accept implements net.Listener.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener: it stops accepting, closes the
// connections still in their handshake and waits for their goroutines.
func (l *listener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.inner.Close()
		l.mu.Lock()
		l.closed = true
		for c := range l.shaking {
			c.Close()
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return err
}

// Addr implements net.Listener.
func (l *listener) Addr() net.Addr { return l.inner.Addr() }

// acceptHandshake tells TLS, a hello and a plain member apart by the first
// byte and runs what each needs.
func (n *Network) acceptHandshake(c net.Conn) (net.Conn, error) {
	first, sniffed, err := tlsconf.Sniff(c)
	if err != nil {
		return nil, err
	}
	if first == tlsconf.RecordHandshake {
		return n.acceptTLS(sniffed)
	}
	if !n.acceptPlain {
		return nil, fmt.Errorf("%w: plaintext connection on a TLS-only member port (sslQuorum=true, portUnification=false)", ErrRefused)
	}
	if n.bare {
		return sniffed, nil
	}
	if first == helloMagic {
		return n.afterHello(c) // past the hello's magic byte
	}
	if n.login != nil && n.login.serverRequire {
		return nil, fmt.Errorf("%w: the member did not log in and quorum.auth.serverRequireSasl=true", ErrRefused)
	}
	return sniffed, nil
}

// acceptTLS runs the server side of TLS; every TLS member then sends a
// hello.
func (n *Network) acceptTLS(c net.Conn) (net.Conn, error) {
	if n.certs == nil {
		return nil, fmt.Errorf("%w: TLS connection but sslQuorum and portUnification are false here", ErrRefused)
	}
	tc := tls.Server(c, n.serverConfig(c.RemoteAddr()))
	if err := tc.Handshake(); err != nil {
		return nil, fmt.Errorf("%w: TLS handshake: %w", ErrRefused, err)
	}
	if n.bare {
		return tc, nil
	}
	var magic [1]byte
	if _, err := io.ReadFull(tc, magic[:]); err != nil {
		return nil, fmt.Errorf("read hello: %w", err)
	}
	if magic[0] != helloMagic {
		return nil, fmt.Errorf("%w: no hello after the TLS handshake", ErrRefused)
	}
	return n.afterHello(tc)
}

// afterHello serves the rest of a hello and logs a login.
func (n *Network) afterHello(c net.Conn) (net.Conn, error) {
	user, err := n.serveHello(c)
	if err != nil {
		return nil, err
	}
	if user != "" {
		n.log.Debug("member logged in", "peer", c.RemoteAddr().String(), "user", user)
	}
	return c, nil
}

// hostOf is the host part of an address.
func hostOf(a net.Addr) string {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
