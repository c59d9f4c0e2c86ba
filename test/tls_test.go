package test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
	"github.com/zkserverd/zkserverd/server/servertest"
	"github.com/zkserverd/zkserverd/tlsconf/tlstest"
)

// tlsEnv is a CA and the files of a TLS-enabled test server.
type tlsEnv struct {
	dir    string
	ca     *tlstest.Cert
	server *tlstest.Cert
	logs   *testutil.LogCapture
}

// client issues a client certificate with the subject name.
func (e *tlsEnv) client(t *testing.T, name pkix.Name) *tlstest.Cert {
	return e.ca.Issue(t, name, tlstest.Options{})
}

// clientConfig trusts the test CA and presents cert (nil: no certificate).
func (e *tlsEnv) clientConfig(cert *tlstest.Cert) *tls.Config {
	cfg := &tls.Config{RootCAs: tlstest.Pool(e.ca), ServerName: "localhost"}
	if cert != nil {
		// Always present it: Go's client otherwise sends none when the
		// certificate's CA is not among those the server asks for.
		c := cert.TLS()
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	return cfg
}

// alice's certificate subject and the DN ZooKeeper shows for it.
var (
	aliceName = pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"ops"}, Organization: []string{"Example"}, Country: []string{"US"}}
	aliceDN   = "CN=alice,OU=ops,O=Example,C=US"
	bobName   = pkix.Name{CommonName: "bob", Organization: []string{"Example"}}
)

// startTLSServer runs a server with a PKCS12 keystore and a PEM
// truststore; mutate adjusts the configuration (ports, keys) before start.
func startTLSServer(t *testing.T, mutate func(*conf.Config)) (*server.Server, *tlsEnv) {
	t.Helper()
	return startTLSServerWith(t, nil, mutate)
}

// startTLSServerWith is startTLSServer with the operator surfaces op.
func startTLSServerWith(t *testing.T, op server.Operator, mutate func(*conf.Config)) (*server.Server, *tlsEnv) {
	t.Helper()
	env := &tlsEnv{dir: t.TempDir(), ca: tlstest.NewCA(t, "zk test CA")}
	env.server = env.ca.Issue(t, pkix.Name{CommonName: "zkserverd"}, tlstest.Options{})
	cfg := testConfig(t, t.TempDir())
	cfg.SSL.KeyStore = conf.Store{Location: tlstest.WriteFile(t, env.dir, "server.p12", env.server.PKCS12KeyStore(t, "secret")), Password: "secret"}
	cfg.SSL.TrustStore = conf.Store{Location: tlstest.WriteFile(t, env.dir, "ca.pem", tlstest.PEMTrustStore(env.ca))}
	mutate(&cfg)
	logger, logs := testutil.CaptureLogger(t, slog.LevelInfo)
	env.logs = logs
	return servertest.Start(t, server.Options{Config: cfg, Logger: logger, Operator: op}), env
}

// secureOnly configures a TLS port and no plaintext port.
func secureOnly(t *testing.T) func(*conf.Config) {
	return func(c *conf.Config) {
		c.SecureClientPort, c.SecureClientPortAddress, c.NoClientPort = freePort(t), "127.0.0.1", true
	}
}

// connectTLS opens a go-zookeeper session over TLS.
func connectTLS(t *testing.T, addr string, cfg *tls.Config) *zk.Conn {
	t.Helper()
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, cfg)
	}
	c, events, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithDialer(dial), zk.WithLogger(testutil.QuietLogger{}))
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	testutil.WaitState(t, events, zk.StateHasSession, 10*time.Second)
	return c
}

// dialRawTLS opens a raw protocol client over TLS and establishes a session.
func dialRawTLS(t *testing.T, addr string, cfg *tls.Config) (*rawClient, error) {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	r := &rawClient{t: t, c: c, br: bufio.NewReader(c)}
	if _, err := r.handshake(jute.ConnectRequest{TimeOut: 4000}); err != nil {
		return nil, err
	}
	return r, nil
}

func TestTLSSecureClientPortCRUD(t *testing.T) {
	s, env := startTLSServer(t, secureOnly(t))
	if s.SecureAddr() == nil || s.Addr().String() != s.SecureAddr().String() {
		t.Fatalf("secure-only server listens on %v, secure %v; want only the secure port", s.Addr(), s.SecureAddr())
	}
	c := connectTLS(t, s.SecureAddr().String(), env.clientConfig(env.client(t, aliceName)))
	if _, err := c.Create("/tls", []byte("v1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set("/tls", []byte("v2"), 0); err != nil {
		t.Fatal(err)
	}
	data, _, err := c.Get("/tls")
	if err != nil || string(data) != "v2" {
		t.Fatalf("get = %q, %v; want v2", data, err)
	}
	if err := c.Delete("/tls", 1); err != nil {
		t.Fatal(err)
	}
	// The session speaks TLS 1.2, ZooKeeper's default protocol.
	tc, err := tls.Dial("tcp", s.SecureAddr().String(), env.clientConfig(env.client(t, bobName)))
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if v := tc.ConnectionState().Version; v != tls.VersionTLS12 {
		t.Fatalf("negotiated TLS version %x, want TLS 1.2", v)
	}
}

func TestTLSPortUnification(t *testing.T) {
	s, env := startTLSServer(t, func(c *conf.Config) { c.SSL.PortUnification = true })
	addr := s.Addr().String()
	secure := connectTLS(t, addr, env.clientConfig(env.client(t, aliceName)))
	plain, _ := testutil.Connect(t, addr, 5*time.Second)
	if _, err := secure.Create("/u", []byte("tls"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	data, _, err := plain.Get("/u")
	if err != nil || string(data) != "tls" {
		t.Fatalf("plaintext get = %q, %v; want the node the TLS client wrote", data, err)
	}
	if got, err := testutil.FourLetter(addr, "ruok"); err != nil || got != "imok" {
		t.Fatalf("ruok on the unified port = %q, %v; want imok", got, err)
	}
}

func TestTLSRefusesBadClients(t *testing.T) {
	s, env := startTLSServer(t, secureOnly(t))
	addr := s.SecureAddr().String()
	stranger := tlstest.NewCA(t, "stranger CA")
	expired := env.ca.Issue(t, aliceName, tlstest.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	tests := []struct {
		name    string
		dial    func() error
		wantLog string
	}{
		{"no client certificate with clientAuth=need", func() error {
			_, err := dialRawTLS(t, addr, env.clientConfig(nil))
			return err
		}, "didn't provide a certificate"},
		{"certificate of an untrusted CA", func() error {
			_, err := dialRawTLS(t, addr, env.clientConfig(stranger.Issue(t, aliceName, tlstest.Options{})))
			return err
		}, "unknown authority"},
		{"expired certificate", func() error {
			_, err := dialRawTLS(t, addr, env.clientConfig(expired))
			return err
		}, "expired"},
		{"plaintext to the TLS port", func() error {
			r := dialRaw(t, addr)
			_, err := r.handshake(jute.ConnectRequest{TimeOut: 4000})
			return err
		}, "does not look like a TLS handshake"},
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(env.logs.String())
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.dial(); err == nil {
				t.Fatal("the server accepted the client")
			}
			testutil.Eventually(t, 5*time.Second, "the handshake failure logged: "+tt.wantLog, func() bool {
				return len(env.logs.Lines("TLS handshake failed", tt.wantLog)) > 0
			})
			// The server keeps serving good clients.
			if _, err := dialRawTLS(t, addr, env.clientConfig(env.client(t, bobName))); err != nil {
				t.Fatalf("a trusted client after the refusal: %v", err)
			}
		})
	}
}

func TestTLSClientAuthWantAcceptsAnonymousClients(t *testing.T) {
	s, env := startTLSServer(t, func(c *conf.Config) {
		secureOnly(t)(c)
		c.SSL.ClientAuth = "want"
	})
	anon, err := dialRawTLS(t, s.SecureAddr().String(), env.clientConfig(nil))
	if err != nil {
		t.Fatalf("an anonymous client with clientAuth=want: %v", err)
	}
	for _, ci := range aclWhoAmI(t, anon) {
		if ci.AuthScheme == "x509" {
			t.Fatalf("anonymous client has an x509 identity %q", ci.User)
		}
	}
	alice, err := dialRawTLS(t, s.SecureAddr().String(), env.clientConfig(env.client(t, aliceName)))
	if err != nil {
		t.Fatal(err)
	}
	if !hasClientInfo(aclWhoAmI(t, alice), "x509", aliceDN) {
		t.Fatalf("whoAmI = %+v, want x509:%s", aclWhoAmI(t, alice), aliceDN)
	}
}

// hasClientInfo reports whether whoAmI listed scheme:user.
func hasClientInfo(infos []jute.ClientInfo, scheme, user string) bool {
	for _, ci := range infos {
		if ci.AuthScheme == scheme && ci.User == user {
			return true
		}
	}
	return false
}

func TestTLSX509ACL(t *testing.T) {
	adminName := pkix.Name{CommonName: "admin", Organization: []string{"Example"}}
	s, env := startTLSServer(t, func(c *conf.Config) {
		secureOnly(t)(c)
		c.Extra["zookeeper.X509AuthenticationProvider.superUser"] = "CN=admin,O=Example"
	})
	addr := s.SecureAddr().String()
	alice := connectTLS(t, addr, env.clientConfig(env.client(t, aliceName)))
	bob := connectTLS(t, addr, env.clientConfig(env.client(t, bobName)))
	admin := connectTLS(t, addr, env.clientConfig(env.client(t, adminName)))
	if _, err := alice.Create("/alice", []byte("mine"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: aliceDN}}); err != nil {
		t.Fatal(err)
	}
	if data, _, err := alice.Get("/alice"); err != nil || string(data) != "mine" {
		t.Fatalf("alice reads her node: %q, %v", data, err)
	}
	if _, _, err := bob.Get("/alice"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("bob reads alice's node: err = %v, want NoAuth", err)
	}
	if data, _, err := admin.Get("/alice"); err != nil || string(data) != "mine" {
		t.Fatalf("the x509 super user reads alice's node: %q, %v", data, err)
	}
	// An "auth" ACL expands to the x509 identity.
	if _, err := alice.Create("/alice-auth", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "auth"}}); err != nil {
		t.Fatal(err)
	}
	acls, _, err := alice.GetACL("/alice-auth")
	if err != nil || len(acls) != 1 || acls[0].Scheme != "x509" || acls[0].ID != aliceDN {
		t.Fatalf("auth ACL = %+v, %v; want x509:%s", acls, err, aliceDN)
	}
	raw, err := dialRawTLS(t, addr, env.clientConfig(env.client(t, adminName)))
	if err != nil {
		t.Fatal(err)
	}
	who := aclWhoAmI(t, raw)
	if !hasClientInfo(who, "x509", "CN=admin,O=Example") || !hasClientInfo(who, "super", "") {
		t.Fatalf("whoAmI of the super user = %+v, want x509:CN=admin,O=Example and super:", who)
	}
}

// TestTLSCertReload: with client.certReload the renewed keystore is served
// to new connections; without it (ZooKeeper's default) the certificate of
// the start stays, whatever the files say.
func TestTLSCertReload(t *testing.T) {
	for _, reload := range []bool{true, false} {
		t.Run(fmt.Sprintf("certReload=%v", reload), func(t *testing.T) {
			s, env := startTLSServer(t, func(c *conf.Config) {
				secureOnly(t)(c)
				c.SSL.CertReload = reload
			})
			addr := s.SecureAddr().String()
			leaf := func() string {
				c, err := tls.Dial("tcp", addr, env.clientConfig(env.client(t, aliceName)))
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				defer c.Close()
				return c.ConnectionState().PeerCertificates[0].Subject.CommonName
			}
			if got := leaf(); got != "zkserverd" {
				t.Fatalf("server certificate %q, want zkserverd", got)
			}
			next := env.ca.Issue(t, pkix.Name{CommonName: "zkserverd-renewed"}, tlstest.Options{})
			tlstest.WriteFile(t, env.dir, "server.p12", next.PKCS12KeyStore(t, "secret"))
			if reload {
				testutil.Eventually(t, 10*time.Second, "the renewed certificate served", func() bool { return leaf() == "zkserverd-renewed" })
				if len(env.logs.Lines("TLS key or trust store reloaded")) == 0 {
					t.Fatal("no log line for the reload")
				}
			} else {
				// The reloader checks every second: three periods
				// without a change show it is not running.
				time.Sleep(3 * time.Second)
				if got := leaf(); got != "zkserverd" {
					t.Fatalf("server certificate %q after the file changed, want zkserverd (no reload)", got)
				}
				if len(env.logs.Lines("reloaded")) > 0 {
					t.Fatal("a reload was logged with client.certReload off")
				}
			}
			if len(env.logs.Lines("zookeeper.client.certReload="+fmt.Sprint(reload))) == 0 {
				t.Error("no log line naming zookeeper.client.certReload")
			}
			connectTLS(t, addr, env.clientConfig(env.client(t, bobName)))
		})
	}
}

// TestTLSOperatorViews: conf shows the bound secure port (and clientPort
// -1 without a plaintext port), and the AdminServer lists the
// connections of secureClientPort under secure_connections, as ZooKeeper
// lists each connection factory's.
func TestTLSOperatorViews(t *testing.T) {
	op := ops.New(ops.Options{})
	s, env := startTLSServerWith(t, op, func(c *conf.Config) {
		c.SecureClientPort, c.SecureClientPortAddress = freePort(t), "127.0.0.1"
	})
	plainPort, securePort := s.Addr().(*net.TCPAddr).Port, s.SecureAddr().(*net.TCPAddr).Port
	secure := connectTLS(t, s.SecureAddr().String(), env.clientConfig(env.client(t, aliceName)))
	plain := dialRaw(t, s.Addr().String())
	plainSession, err := plain.handshake(jute.ConnectRequest{TimeOut: 20000})
	if err != nil {
		t.Fatal(err)
	}
	confText, err := testutil.FourLetter(s.Addr().String(), "conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("clientPort=%d\n", plainPort), fmt.Sprintf("secureClientPort=%d\n", securePort)} {
		if !strings.Contains(confText, want) {
			t.Errorf("conf lacks %q:\n%s", want, confText)
		}
	}
	// cons lists the connections of the port it is asked on.
	plainSid, secureSid := fmt.Sprintf("sid=0x%x,", plainSession.SessionID), fmt.Sprintf("sid=0x%x,", secure.SessionID())
	plainCons, err := testutil.FourLetter(s.Addr().String(), "cons")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plainCons, plainSid) || strings.Contains(plainCons, secureSid) {
		t.Errorf("cons on clientPort:\n%s\nwant %s and not %s", plainCons, plainSid, secureSid)
	}
	if secureCons := fourLetterTLS(t, s.SecureAddr().String(), env.clientConfig(env.client(t, aliceName)), "cons"); !strings.Contains(secureCons, secureSid) || strings.Contains(secureCons, plainSid) {
		t.Errorf("cons on secureClientPort:\n%s\nwant %s and not %s", secureCons, secureSid, plainSid)
	}
	type adminConn struct {
		SessionID int64 `json:"session_id"`
	}
	var conns struct {
		Connections []adminConn `json:"connections"`
		Secure      []adminConn `json:"secure_connections"`
	}
	adminJSON(t, op, "connections", &conns)
	// The four-letter word connections above may still be listed (with
	// session 0) until the server has closed them.
	sessions := func(list []adminConn) []int64 {
		var out []int64
		for _, c := range list {
			if c.SessionID != 0 {
				out = append(out, c.SessionID)
			}
		}
		return out
	}
	if p, sc := sessions(conns.Connections), sessions(conns.Secure); !slices.Equal(p, []int64{plainSession.SessionID}) || !slices.Equal(sc, []int64{secure.SessionID()}) {
		t.Errorf("connections %+v, want the plaintext session %#x and the secure session %#x", conns, plainSession.SessionID, secure.SessionID())
	}

	secureOnlyOp := ops.New(ops.Options{})
	s2, _ := startTLSServerWith(t, secureOnlyOp, secureOnly(t))
	var cfgJSON struct {
		ClientPort int `json:"client_port"`
	}
	adminJSON(t, secureOnlyOp, "configuration", &cfgJSON)
	if cfgJSON.ClientPort != -1 {
		t.Errorf("client_port %d with only secureClientPort %v, want -1", cfgJSON.ClientPort, s2.SecureAddr())
	}
}

// adminJSON decodes the AdminServer's reply to command into out.
func adminJSON(t *testing.T, op *ops.Surfaces, command string, out any) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + op.AdminAddr().String() + "/commands/" + command)
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("%s: %v in %s", command, err, body)
	}
}

// fourLetterTLS sends a four-letter word over TLS and returns the reply.
func fourLetterTLS(t *testing.T, addr string, cfg *tls.Config, cmd string) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatalf("%s over TLS: %v", cmd, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, cmd); err != nil {
		t.Fatalf("%s over TLS: %v", cmd, err)
	}
	out, err := io.ReadAll(c)
	if err != nil && len(out) == 0 {
		t.Fatalf("%s over TLS: %v", cmd, err)
	}
	return string(out)
}
