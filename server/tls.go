package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkserverd/zkserverd/acl"
	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/tlsconf"
)

// This file is the client port's TLS: the secure listener (secureClientPort),
// port unification on clientPort (client.portUnification), the handshake
// (run by a connection's reader at the start of its own handshake, under
// the same deadline as the connect request), and the x509 identity taken
// from a verified client certificate.

// tlsReloadInterval is how often the keystore files are checked for
// changes (with client.certReload).
const tlsReloadInterval = time.Second

// newClientTLS logs the security keys accepted but not acted on, builds
// the client port's TLS configuration when one is configured (nil
// otherwise), and registers the x509 provider when no
// authProvider.N gave one, as ZooKeeper does for a TLS client port.
func newClientTLS(cfg conf.Config, reg *acl.Registry, logger *slog.Logger) (*tlsconf.Reloader, error) {
	for _, line := range cfg.IgnoredSecurityKeys() {
		logger.Info("security configuration", "note", line)
	}
	if !cfg.TLSEnabled() {
		return nil, nil
	}
	r, notes, err := tlsconf.NewReloader(tlsconf.OptionsFrom(cfg.SSL.TLSKeys), logger)
	if err != nil {
		return nil, fmt.Errorf("server: client TLS: %w", err)
	}
	for _, n := range notes {
		logger.Warn(n)
	}
	if _, ok := reg.Provider(acl.SchemeX509); !ok {
		p, err := acl.NewProviderByName(acl.SchemeX509, cfg.Extra)
		if err != nil {
			return nil, fmt.Errorf("server: x509 provider: %w", err)
		}
		if err := reg.Register(p); err != nil {
			return nil, fmt.Errorf("server: x509 provider: %w", err)
		}
	}
	return r, nil
}

// listenClients opens the client listeners: clientPort (plaintext, or
// unified when client.portUnification is set) unless only
// secureClientPort is configured, and secureClientPort. It also starts
// the keystore reloader when client.certReload is set.
func (s *Server) listenClients(ctx context.Context) (net.Listener, error) {
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	if !s.cfg.NoClientPort {
		ln := s.lentLn
		if ln == nil {
			var err error
			if ln, err = ClientListenConfig(s.cfg).Listen(ctx, "tcp", s.cfg.ClientAddr()); err != nil {
				return nil, fmt.Errorf("server: listen on %s: %w", s.cfg.ClientAddr(), err)
			}
		}
		if s.cfg.SSL.PortUnification {
			ln = &tlsListener{Listener: ln, cfg: s.clientTLS.ServerConfig(), unified: true}
		}
		lns = append(lns, ln)
	}
	if s.cfg.SecureClientPort != 0 {
		ln, err := ClientListenConfig(s.cfg).Listen(ctx, "tcp", s.cfg.SecureClientAddr())
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("server: listen on %s: %w", s.cfg.SecureClientAddr(), err)
		}
		s.secureLn = ln
		lns = append(lns, &tlsListener{Listener: ln, cfg: s.clientTLS.ServerConfig()})
		s.log.Info("secure client port open", "addr", ln.Addr().String())
	}
	if s.clientTLS != nil {
		// As ZooKeeper's NettyServerCnxnFactory: files are watched only
		// with zookeeper.client.certReload=true.
		s.log.Info("client TLS certificate reload", "zookeeper.client.certReload", s.cfg.SSL.CertReload)
		if s.cfg.SSL.CertReload {
			s.goAndTrack(func() { s.clientTLS.Run(s.ctx, tlsReloadInterval) })
		}
	}
	if len(lns) == 1 {
		return lns[0], nil
	}
	return newMultiListener(lns), nil
}

// SecureAddr returns the TLS client listener's address (after Start), or
// nil when there is no secureClientPort.
func (s *Server) SecureAddr() net.Addr {
	if s.secureLn == nil {
		return nil
	}
	return s.secureLn.Addr()
}

// startTLS runs the TLS handshake of a connection accepted on a TLS or
// unified port (others pass through), under the read deadline the caller
// set, and gives the connection the identity of a verified client
// certificate. It returns false when the connection must close; the
// reason is logged once.
func (c *conn) startTLS() bool {
	sc, ok := c.nc.(*secureConn)
	if !ok {
		return true
	}
	c.nc.SetWriteDeadline(time.Now().Add(time.Duration(c.s.cfg.SessionlessCnxnTimeout) * time.Millisecond))
	defer c.nc.SetWriteDeadline(time.Time{})
	state, err := sc.handshake(c.s.ctx)
	switch {
	case errors.Is(err, io.EOF):
		c.log.Debug("closed before the TLS handshake")
		return false
	case err != nil:
		c.log.Warn("TLS handshake failed; closing", "err", err)
		return false
	case state == nil || len(state.PeerCertificates) == 0:
		return true // plaintext on a unified port, or no certificate asked for
	}
	return c.authenticateTLS(state)
}

// authenticateTLS adds the identities ssl.authProvider's provider derives
// from the verified client certificate; a failure closes the connection,
// as ZooKeeper does.
func (c *conn) authenticateTLS(state *tls.ConnectionState) bool {
	scheme := c.s.cfg.SSL.AuthProvider
	ids, err := c.s.auth.Authenticate(scheme, acl.ConnInfo{RemoteAddr: c.nc.RemoteAddr(), PeerCertificates: state.PeerCertificates}, nil)
	if err != nil {
		c.s.stats.authFailed.Add(1)
		c.log.Warn("TLS client certificate not accepted; closing", "auth_provider", scheme, "err", err)
		return false
	}
	c.addIDs(ids)
	c.orderIDsLikeJava()
	c.log.Debug("TLS client authenticated", "ids", ids)
	return true
}

// tlsListener marks the connections of a TLS (or unified) port: each is a
// secureConn whose handshake its reader runs.
type tlsListener struct {
	net.Listener
	cfg     *tls.Config
	unified bool
}

// Accept implements net.Listener.
func (l *tlsListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &secureConn{Conn: nc, cfg: l.cfg, unified: l.unified}, nil
}

// errNoHandshake is returned by I/O on a secureConn before its handshake.
var errNoHandshake = errors.New("server: TLS connection used before its handshake")

// secureConn is a connection of a TLS or unified port. Addresses,
// deadlines and Close act on the TCP connection; Read and Write go
// through what the handshake set up (TLS, or on a unified port plaintext
// with the byte read to tell them apart put back). It deliberately does not
// implement syscall.Conn, so that nothing writes around the TLS layer.
type secureConn struct {
	net.Conn
	cfg     *tls.Config
	unified bool
	// up is the connection Read and Write use, set once by handshake on
	// the reader goroutine before any reply can be queued.
	up atomic.Pointer[net.Conn]
}

// handshake reads the first byte on a unified port and, for TLS, runs the
// server handshake. It returns the TLS state, or nil for plaintext.
func (sc *secureConn) handshake(ctx context.Context) (*tls.ConnectionState, error) {
	var under net.Conn = sc.Conn
	if sc.unified {
		first, sniffed, err := tlsconf.Sniff(sc.Conn)
		if err != nil {
			return nil, err
		}
		under = sniffed
		if first != tlsconf.RecordHandshake {
			sc.up.Store(&under)
			return nil, nil
		}
	}
	tc := tls.Server(under, sc.cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	var up net.Conn = tc
	sc.up.Store(&up)
	state := tc.ConnectionState()
	return &state, nil
}

// Read implements net.Conn.
func (sc *secureConn) Read(p []byte) (int, error) {
	if up := sc.up.Load(); up != nil {
		return (*up).Read(p)
	}
	return 0, errNoHandshake
}

// Write implements net.Conn.
func (sc *secureConn) Write(p []byte) (int, error) {
	if up := sc.up.Load(); up != nil {
		return (*up).Write(p)
	}
	return 0, errNoHandshake
}

// multiListener accepts from several listeners (the plaintext and the
// secure client ports) for one accept loop; its address is the first's.
type multiListener struct {
	lns     []net.Listener
	results chan acceptResult
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// acceptResult is one Accept of an underlying listener.
type acceptResult struct {
	nc  net.Conn
	err error
}

// newMultiListener starts one accepting goroutine per listener. A result
// is handed over only when the accept loop asks for the next one, so the
// loop's back-off on errors holds for every listener.
func newMultiListener(lns []net.Listener) *multiListener {
	m := &multiListener{lns: lns, results: make(chan acceptResult), done: make(chan struct{})}
	for _, ln := range lns {
		m.wg.Add(1)
		go m.acceptFrom(ln)
	}
	return m
}

// acceptFrom forwards ln's connections until ln or m closes.
func (m *multiListener) acceptFrom(ln net.Listener) {
	defer m.wg.Done()
	for {
		nc, err := ln.Accept()
		select {
		case m.results <- acceptResult{nc, err}:
		case <-m.done:
			if nc != nil {
				nc.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Accept implements net.Listener.
func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case r := <-m.results:
		return r.nc, r.err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener: it closes every listener and waits for
// the accepting goroutines.
func (m *multiListener) Close() error {
	var errs []error
	m.once.Do(func() {
		close(m.done)
		for _, ln := range m.lns {
			errs = append(errs, ln.Close())
		}
		m.wg.Wait()
	})
	return errors.Join(errs...)
}

// Addr implements net.Listener.
func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
