package peernet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/sasl"
	"github.com/zkserverd/zkserverd/tlsconf"
)

// ErrRefused marks a member connection refused by either side: a TLS
// failure, a failed or missing login, or a mode the other side does not
// accept.
var ErrRefused = errors.New("peernet: member connection refused")

// defaultHandshakeTimeout bounds a handshake when the configuration gives
// no initLimit x tickTime.
const defaultHandshakeTimeout = 10 * time.Second

// reloadInterval is how often, at most, sslQuorumReloadCertFiles checks
// the keystore files (on the next connection after it elapsed).
const reloadInterval = time.Second

// Network dials and listens for the links between members. Safe for
// concurrent use.
type Network struct {
	log     *slog.Logger
	timeout time.Duration // bounds a connection's handshake

	// TLS; certs is nil when the quorum ports do not speak TLS.
	certs       *tlsconf.Reloader
	dialTLS     bool // sslQuorum: dial with TLS
	acceptPlain bool // plaintext members are accepted
	verifyHost  bool
	clientAuth  tls.ClientAuthType
	reload      bool
	// reloadMu guards lastCheck and serializes certs.Check.
	reloadMu  sync.Mutex
	lastCheck time.Time

	login *login // nil: quorum SASL is off
	// bare: TLS and nothing after it, as Apache ZooKeeper members connect
	// (NewForZooKeeper); no hello is sent or expected.
	bare bool

	refusals *logLimiter
}

// login is this member's quorum SASL setup.
type login struct {
	learnerRequire bool              // authenticate when dialing
	serverRequire  bool              // refuse members that do not authenticate
	user, password string            // the QuorumLearner credentials
	users          map[string]string // the QuorumServer users
}

// Enabled reports whether cfg asks for anything but plain TCP between
// members; New is needed only then.
func Enabled(cfg conf.Config) bool { return cfg.Quorum.Secured() }

// New builds the network cfg describes: it loads the quorum keystores
// (when sslQuorum or portUnification is set) and the JAAS sections (when
// quorum.auth.enableSasl is set). Errors name the key or section at fault.
func New(cfg conf.Config, logger *slog.Logger) (*Network, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	q := cfg.Quorum
	n := &Network{
		log:         logger,
		timeout:     time.Duration(cfg.InitLimit*cfg.TickTime) * time.Millisecond,
		dialTLS:     q.SSL,
		acceptPlain: !q.TLSConfigured() || q.PortUnification,
		verifyHost:  q.TLS.HostnameVerification,
		reload:      q.ReloadCertFiles,
		refusals:    newLogLimiter(refusalLogInterval),
	}
	if n.timeout <= 0 {
		n.timeout = defaultHandshakeTimeout
	}
	if q.TLSConfigured() {
		if err := n.loadTLS(q.TLS); err != nil {
			return nil, err
		}
	}
	if q.SASL.Enable {
		l, err := loadLogin(cfg)
		if err != nil {
			return nil, err
		}
		n.login = l
	}
	logger.Info("member links secured", "sslQuorum", q.SSL, "portUnification", q.PortUnification,
		"hostnameVerification", n.verifyHost, "sasl", q.SASL.Enable,
		"learnerRequireSasl", q.SASL.LearnerRequire, "serverRequireSasl", q.SASL.ServerRequire)
	return n, nil
}

// loadTLS loads the ssl.quorum.* stores.
func (n *Network) loadTLS(t conf.TLSKeys) error {
	r, notes, err := tlsconf.NewReloader(tlsconf.OptionsFrom(t), n.log)
	if err != nil {
		return fmt.Errorf("peernet: ssl.quorum: %w", err)
	}
	for _, note := range notes {
		n.log.Warn("ssl.quorum: " + note)
	}
	n.certs = r
	// Chains are verified by verifyPeer, which accepts any extended key
	// usage, as a member's one certificate serves both directions.
	switch r.Config().ClientAuth {
	case tls.RequireAndVerifyClientCert:
		n.clientAuth = tls.RequireAnyClientCert
	case tls.VerifyClientCertIfGiven:
		n.clientAuth = tls.RequestClientCert
	default:
		n.clientAuth = tls.NoClientCert
	}
	return nil
}

// loadLogin reads the QuorumServer and QuorumLearner JAAS sections.
func loadLogin(cfg conf.Config) (*login, error) {
	s := cfg.Quorum.SASL
	if cfg.SASL.JAASConfigFile == "" {
		return nil, fmt.Errorf("peernet: quorum.auth.enableSasl=true needs a JAAS file (java.security.auth.login.config)")
	}
	jaas, err := sasl.LoadJAAS(cfg.SASL.JAASConfigFile)
	if err != nil {
		return nil, fmt.Errorf("peernet: quorum SASL: %w", err)
	}
	for _, section := range []string{s.ServerLoginContext, s.LearnerLoginContext} {
		if _, ok := jaas[section]; !ok {
			return nil, fmt.Errorf("peernet: quorum SASL: the JAAS file %s has no section %q", cfg.SASL.JAASConfigFile, section)
		}
		if jaas.UsesKerberos(section) {
			return nil, fmt.Errorf("peernet: quorum SASL: JAAS section %q uses Krb5LoginModule; Kerberos between members is not supported (use DigestLoginModule)", section)
		}
	}
	l := &login{learnerRequire: s.LearnerRequire, serverRequire: s.ServerRequire, users: jaas.Users(s.ServerLoginContext)}
	if len(l.users) == 0 {
		return nil, fmt.Errorf("peernet: quorum SASL: JAAS section %q lists no user_NAME entries", s.ServerLoginContext)
	}
	var ok bool
	if l.user, l.password, ok = jaas.Credentials(s.LearnerLoginContext); !ok {
		return nil, fmt.Errorf("peernet: quorum SASL: JAAS section %q has no username and password", s.LearnerLoginContext)
	}
	return l, nil
}

// tlsBase returns the current TLS configuration, first reloading the
// files when sslQuorumReloadCertFiles is set and a second has passed.
func (n *Network) tlsBase() *tls.Config {
	if n.reload {
		n.reloadMu.Lock()
		if time.Since(n.lastCheck) >= reloadInterval {
			n.lastCheck = time.Now()
			n.certs.Check()
		}
		n.reloadMu.Unlock()
	}
	return n.certs.Config()
}

// Dial connects to the member at addr (its server.N host and port) and
// runs the handshake: TLS when sslQuorum is set, then the login when
// quorum.auth.learnerRequireSasl is set. timeout bounds all of it.
func (n *Network) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 {
		timeout = n.timeout
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(timeout))
	up, err := n.dialHandshake(c, addr)
	if err != nil {
		c.Close()
		n.logRefusal("could not connect to member", "dial "+addr, addr, err)
		return nil, err
	}
	up.SetDeadline(time.Time{})
	return up, nil
}

// dialHandshake runs the dialing side's handshake on c.
func (n *Network) dialHandshake(c net.Conn, addr string) (net.Conn, error) {
	up := c
	if n.dialTLS {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%w: bad address %q: %w", ErrRefused, addr, err)
		}
		tc := tls.Client(c, n.clientConfig(host, c.RemoteAddr()))
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("%w: TLS handshake: %w", ErrRefused, err)
		}
		up = tc
	}
	authenticate := n.login != nil && n.login.learnerRequire
	if n.bare || !n.dialTLS && !authenticate {
		return up, nil // exactly the bytes of a plain member
	}
	if err := n.sendHello(up, authenticate); err != nil {
		return nil, err
	}
	return up, nil
}

// Listen opens a member port at addr. Accept returns connections whose
// handshake succeeded; the others are logged and closed.
func (n *Network) Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return newListener(ln, n), nil
}

// logRefusal logs a refused connection at warn, at most once per
// refusalLogInterval for the same key (later ones at debug).
func (n *Network) logRefusal(msg, key, peer string, err error) {
	level := slog.LevelWarn
	if !n.refusals.allow(key + "\x00" + err.Error()) {
		level = slog.LevelDebug
	}
	n.log.Log(context.Background(), level, msg, "peer", peer, "reason", err)
}
