package peernet

import (
	"bufio"
	"bytes"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/tlsconf/tlstest"
)

// certs are the certificates of the tests: members of one CA, one
// member of another CA, and one that names only another host.
type certs struct {
	ca, member, stranger, misnamed, ipOnly *tlstest.Cert
}

func newCerts(t *testing.T) certs {
	ca, other := tlstest.NewCA(t, "quorum CA"), tlstest.NewCA(t, "other CA")
	return certs{
		ipOnly:   ca.Issue(t, pkix.Name{CommonName: "ip-only"}, tlstest.Options{Hosts: []string{"127.0.0.1"}}),
		ca:       ca,
		member:   ca.Issue(t, pkix.Name{CommonName: "member"}, tlstest.Options{}),
		stranger: other.Issue(t, pkix.Name{CommonName: "stranger"}, tlstest.Options{}),
		misnamed: ca.Issue(t, pkix.Name{CommonName: "misnamed"}, tlstest.Options{Hosts: []string{"zk9.example.com", "10.9.9.9"}}),
	}
}

// side is one member's setting in a test case.
type side struct {
	ssl, unified  bool
	cert          *tlstest.Cert // default: the member certificate
	noHostVerify  bool
	sasl          bool
	learnerReq    bool
	serverReq     bool
	learnerPasswd string // default: right
}

// config writes side's files to a new directory and returns its
// configuration.
func (s side) config(t *testing.T, c certs) conf.Config {
	dir := t.TempDir()
	cfg := conf.Default()
	cfg.TickTime, cfg.InitLimit = 500, 10
	q := &cfg.Quorum
	q.SSL, q.PortUnification = s.ssl, s.unified
	q.TLS.HostnameVerification = !s.noHostVerify
	if q.TLSConfigured() {
		cert := s.cert
		if cert == nil {
			cert = c.member
		}
		q.TLS.KeyStore.Location = tlstest.WriteFile(t, dir, "member.p12", cert.PKCS12KeyStore(t, "pw"))
		q.TLS.KeyStore.Password = "pw"
		q.TLS.TrustStore.Location = tlstest.WriteFile(t, dir, "ca.pem", tlstest.PEMTrustStore(c.ca))
	}
	if s.sasl {
		q.SASL.Enable, q.SASL.LearnerRequire, q.SASL.ServerRequire = true, s.learnerReq, s.serverReq
		pw := s.learnerPasswd
		if pw == "" {
			pw = "right"
		}
		cfg.SASL.JAASConfigFile = testutil.WriteQuorumJAAS(t, dir, "right", pw)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test configuration: %v", err)
	}
	return cfg
}

// echoServer serves lines back on every connection ln hands over, and
// counts them on accepted.
func echoServer(ln net.Listener, accepted chan<- struct{}) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		accepted <- struct{}{}
		go func() {
			defer c.Close()
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil {
				io.WriteString(c, line)
			}
		}()
	}
}

func TestHandshakes(t *testing.T) {
	c := newCerts(t)
	tests := []struct {
		name             string
		dialer, acceptor side
		// plainDialer dials without a Network: a member without these
		// keys, or with quorum.auth.learnerRequireSasl=false, which sends
		// the same bytes.
		plainDialer bool
		// dialHost replaces 127.0.0.1 in the address dialed.
		dialHost string
		// refusal: "" means the connection works; otherwise text the
		// acceptor's log line holds, and dialerLog the dialer's.
		refusal, dialerLog string
	}{
		{name: "mutual TLS", dialer: side{ssl: true}, acceptor: side{ssl: true}},
		{name: "untrusted dialer", dialer: side{ssl: true, cert: c.stranger}, acceptor: side{ssl: true},
			refusal: "not trusted", dialerLog: "bad certificate"},
		{name: "untrusted acceptor", dialer: side{ssl: true}, acceptor: side{ssl: true, cert: c.stranger},
			refusal: "bad certificate", dialerLog: "not trusted"},
		{name: "dialer's certificate names another host", dialer: side{ssl: true, cert: c.misnamed}, acceptor: side{ssl: true},
			refusal: "hostname verification", dialerLog: "bad certificate"},
		{name: "acceptor's certificate names another host", dialer: side{ssl: true}, acceptor: side{ssl: true, cert: c.misnamed},
			refusal: "bad certificate", dialerLog: "hostname verification"},
		{name: "member dialed by name, certificate names its address", dialer: side{ssl: true}, dialHost: "localhost",
			acceptor: side{ssl: true, cert: c.ipOnly}},
		{name: "hostname verification off", dialer: side{ssl: true, cert: c.misnamed, noHostVerify: true},
			acceptor: side{ssl: true, cert: c.misnamed, noHostVerify: true}},
		{name: "plaintext member to TLS-only port", plainDialer: true, acceptor: side{ssl: true},
			refusal: "plaintext connection on a TLS-only member port"},
		{name: "plaintext member to unified port", plainDialer: true, acceptor: side{ssl: true, unified: true}},
		{name: "TLS member to unified plaintext port", dialer: side{ssl: true}, acceptor: side{unified: true}},
		{name: "TLS member to plaintext port", dialer: side{ssl: true}, acceptor: side{sasl: true},
			refusal: "sslQuorum and portUnification are false here", dialerLog: "TLS handshake"},
		{name: "SASL login", dialer: side{sasl: true, learnerReq: true}, acceptor: side{sasl: true, learnerReq: true, serverReq: true}},
		{name: "SASL login over TLS", dialer: side{ssl: true, sasl: true, learnerReq: true},
			acceptor: side{ssl: true, sasl: true, learnerReq: true, serverReq: true}},
		{name: "wrong password", dialer: side{sasl: true, learnerReq: true, learnerPasswd: "wrong"},
			acceptor: side{sasl: true, learnerReq: true, serverReq: true},
			refusal:  `wrong password for \"zkpeer\"`, dialerLog: "refused by the member: login failed"},
		{name: "wrong password, server does not require SASL", dialer: side{sasl: true, learnerReq: true, learnerPasswd: "wrong"},
			acceptor: side{sasl: true},
			refusal:  `wrong password for \"zkpeer\"`, dialerLog: "refused by the member: login failed"},
		{name: "acceptor has the wrong password", dialer: side{sasl: true, learnerReq: true},
			acceptor: side{sasl: true, learnerReq: true, serverReq: true, learnerPasswd: "wrong"},
			refusal:  "refused by the member: login failed", dialerLog: `wrong password for \"zkpeer\"`},
		{name: "acceptor does not log in, dialer requires it", dialer: side{sasl: true, learnerReq: true, serverReq: true},
			acceptor: side{sasl: true},
			refusal:  "refused by the member: the member did not log in", dialerLog: "did not log in"},
		{name: "acceptor does not log in, dialer lets it through", dialer: side{sasl: true, learnerReq: true},
			acceptor: side{sasl: true}},
		{name: "learner skips SASL, server requires it", plainDialer: true, acceptor: side{sasl: true, learnerReq: true, serverReq: true},
			refusal: "did not log in"},
		{name: "learner skips SASL over TLS, server requires it", dialer: side{ssl: true, sasl: true},
			acceptor: side{ssl: true, sasl: true, learnerReq: true, serverReq: true},
			refusal:  "did not log in", dialerLog: "did not log in"},
		{name: "learner skips SASL, server lets it through", dialer: side{sasl: true}, acceptor: side{sasl: true}},
		{name: "plain member, server lets it through", plainDialer: true, acceptor: side{sasl: true, learnerReq: true}},
		{name: "learner logs in, server has SASL off", dialer: side{sasl: true, learnerReq: true}, acceptor: side{unified: true},
			refusal: "quorum.auth.enableSasl is false here", dialerLog: "quorum.auth.enableSasl is false here"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runHandshake(t, c, tc.dialer, tc.acceptor, tc.plainDialer, tc.dialHost, tc.refusal, tc.dialerLog)
		})
	}
}

// listenEcho starts a member network of cfg listening on loopback, whose
// accepted connections echoServer serves, until the test ends.
func listenEcho(t *testing.T, cfg conf.Config, logger *slog.Logger, accepted chan<- struct{}) net.Listener {
	t.Helper()
	n, err := New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := n.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go echoServer(ln, accepted)
	return ln
}

// runHandshake connects a dialer to an acceptor and checks the outcome.
func runHandshake(t *testing.T, c certs, dialer, acceptor side, plainDialer bool, dialHost, refusal, dialerLog string) {
	acceptLog, acceptCapture := testutil.CaptureLogger(t, slog.LevelInfo)
	accepted := make(chan struct{}, 4)
	ln := listenEcho(t, acceptor.config(t, c), acceptLog, accepted)

	dialLog, dialCapture := testutil.CaptureLogger(t, slog.LevelInfo)
	var conn net.Conn
	var err error
	if plainDialer {
		conn, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	} else {
		var dn *Network
		if dn, err = New(dialer.config(t, c), dialLog); err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		if dialHost != "" {
			addr = strings.Replace(addr, "127.0.0.1", dialHost, 1)
		}
		conn, err = dn.Dial(addr, 5*time.Second)
	}
	if refusal == "" {
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		defer conn.Close()
		expectEcho(t, conn)
		return
	}
	switch {
	case plainDialer:
		// A plain member learns nothing but a closed connection.
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, "x\n")
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Fatal("a refused plain member read data")
		}
		conn.Close()
	case err == nil:
		conn.Close()
		t.Fatal("Dial succeeded; want a refusal")
	case !errors.Is(err, ErrRefused):
		t.Errorf("Dial error %v does not match ErrRefused", err)
	}
	testutil.Eventually(t, 5*time.Second, "the acceptor's refusal log line", func() bool {
		return len(acceptCapture.Lines("level=WARN", "refused a member connection", "peer=127.0.0.1:", refusal)) > 0
	})
	if dialerLog != "" {
		if got := dialCapture.Lines("level=WARN", "could not connect to member", "peer="+ln.Addr().String(), dialerLog); len(got) == 0 {
			t.Errorf("the dialer logged no refusal with %q", dialerLog)
		}
	}
	if len(accepted) != 0 {
		t.Error("a refused connection was handed to Accept")
	}
}

// expectEcho checks that a line goes through conn and back.
func expectEcho(t *testing.T, conn net.Conn) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "ping\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo = %q, %v; want ping", line, err)
	}
}

func TestNewRefusesBadSetups(t *testing.T) {
	c := newCerts(t)
	krb := `QuorumServer {
  com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k" principal="zkquorum/h@R";
};
QuorumLearner {
  org.apache.zookeeper.server.auth.DigestLoginModule required username="a" password="b";
};
`
	noLearner := "QuorumServer {\n org.apache.zookeeper.server.auth.DigestLoginModule required user_a=\"b\";\n};\n"
	tests := []struct {
		name, jaas, want string
		edit             func(*conf.Config)
	}{
		{name: "Kerberos section", jaas: krb, want: "Kerberos between members is not supported"},
		{name: "missing QuorumLearner", jaas: noLearner, want: `no section "QuorumLearner"`},
		{name: "renamed section", jaas: noLearner, want: `no section "Peers"`,
			edit: func(c *conf.Config) { c.Quorum.SASL.ServerLoginContext = "Peers" }},
		{name: "keystore missing", want: "ssl.quorum",
			edit: func(c *conf.Config) { c.Quorum.TLS.KeyStore.Location = "/nonexistent.p12" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := side{ssl: true, sasl: true, learnerReq: true}.config(t, c)
			if tc.jaas != "" {
				if err := os.WriteFile(cfg.SASL.JAASConfigFile, []byte(tc.jaas), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			_, err := New(cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v; want one containing %q", err, tc.want)
			}
		})
	}
}

func TestListenerCloseEndsHandshakes(t *testing.T) {
	n, err := New(side{ssl: true}.config(t, newCerts(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := n.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A connection that never sends a byte stays in its handshake.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	go func() { done <- ln.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a silent member's handshake")
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close = %v; want net.ErrClosed", err)
	}
}

func TestReloadCertFiles(t *testing.T) {
	c := newCerts(t)
	acceptor := side{ssl: true, cert: c.stranger}.config(t, c)
	acceptor.Quorum.ReloadCertFiles = true
	ln := listenEcho(t, acceptor, nil, make(chan struct{}, 16))
	dn, err := New(side{ssl: true}.config(t, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := dn.Dial(ln.Addr().String(), 5*time.Second); err == nil {
		conn.Close()
		t.Fatal("the untrusted certificate was accepted")
	}
	// The operator replaces the keystore with one the quorum CA issued.
	dir := filepath.Dir(acceptor.Quorum.TLS.KeyStore.Location)
	tlstest.WriteFile(t, dir, filepath.Base(acceptor.Quorum.TLS.KeyStore.Location), c.member.PKCS12KeyStore(t, "pw"))
	var conn net.Conn
	testutil.Eventually(t, 5*time.Second, "a connection with the reloaded certificate", func() bool {
		conn, err = dn.Dial(ln.Addr().String(), 5*time.Second)
		return err == nil
	})
	defer conn.Close()
	expectEcho(t, conn)
}

// FuzzAcceptHandshake feeds a member port that requires a login whatever
// a connecting peer may send: the handshake ends (no panic, no hang) and
// never lets the peer in, since no input can answer the fresh nonce.
func FuzzAcceptHandshake(f *testing.F) {
	var login bytes.Buffer
	login.Write([]byte{helloMagic, modeDigest})
	writeToken(&login, nil)
	writeToken(&login, []byte(`username="zkpeer",realm="zk-quorum-sasl-md5",nonce="x",cnonce="y",nc=00000001,qop=auth,digest-uri="zookeeper-quorum/zk-quorum-sasl-md5",response=0123456789abcdef0123456789abcdef`))
	for _, seed := range [][]byte{login.Bytes(), {helloMagic, modeNone}, {helloMagic, 9}, {0x16, 3, 1}, []byte("plain raft"), {}} {
		f.Add(seed)
	}
	var n *Network
	f.Fuzz(func(t *testing.T, data []byte) {
		if n == nil {
			var err error
			if n, err = New(side{sasl: true, learnerReq: true, serverReq: true}.config(t, certs{}), nil); err != nil {
				t.Fatal(err)
			}
		}
		server, client := net.Pipe()
		defer server.Close()
		server.SetDeadline(time.Now().Add(5 * time.Second))
		go io.Copy(io.Discard, client)
		go func() {
			client.Write(data)
			client.Close()
		}()
		if _, err := n.acceptHandshake(server); err == nil {
			t.Fatalf("input %q was let in", data)
		}
	})
}
