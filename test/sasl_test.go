package test

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
)

// saslJAAS is the server's JAAS file of the SASL tests.
const saslJAAS = `Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_super="adminsecret"
  user_bob="bobsecret";
};
`

// saslConfig is a server with DIGEST-MD5 users bob and super (a super user)
// and the sasl ACL scheme; adjust changes it further.
func saslConfig(t *testing.T, adjust func(*conf.SASL)) conf.Config {
	t.Helper()
	cfg := aclConfig(t)
	jaas := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(jaas, []byte(saslJAAS), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.SASL.JAASConfigFile = jaas
	cfg.SASL.SuperUsers = []string{"super"}
	cfg.AuthProviders = map[int]string{1: "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"}
	if adjust != nil {
		adjust(&cfg.SASL)
	}
	return cfg
}

// saslCall sends one sasl request with xid 0, as the Java client and kazoo
// do, and returns the reply header, the reply token, and how long it took.
func saslCall(t *testing.T, r *rawClient, token []byte) (jute.ReplyHeader, []byte, time.Duration) {
	t.Helper()
	start := time.Now()
	r.send(&jute.RequestHeader{Xid: 0, Type: jute.OpSASL}, &jute.SASLToken{Token: token})
	b, err := r.readFrame(5 * time.Second)
	if err != nil {
		t.Fatalf("sasl: read reply: %v", err)
	}
	d := jute.NewDecoder(b)
	var h jute.ReplyHeader
	h.Decode(d)
	var tok jute.SASLToken
	tok.Decode(d)
	if d.Err() != nil {
		t.Fatalf("sasl reply %+v: body: %v", h, d.Err())
	}
	return h, tok.Token, time.Since(start)
}

// md5hex is HEX(H(s)); md5raw is H(s).
func md5hex(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
func md5raw(s string) string { sum := md5.Sum([]byte(s)); return string(sum[:]) }

// digestLogin runs the client side of DIGEST-MD5 (RFC 2831, as the Java
// client: authzid = user, digest-uri zookeeper/zk-sasl-md5) and returns the
// header of the reply to the response.
func digestLogin(t *testing.T, r *rawClient, user, password string) (jute.ReplyHeader, time.Duration) {
	t.Helper()
	return digestLoginAs(t, r, user, password, user)
}

// digestLoginAs is digestLogin with the authorization id authzid.
func digestLoginAs(t *testing.T, r *rawClient, user, password, authzid string) (jute.ReplyHeader, time.Duration) {
	t.Helper()
	h, challenge, _ := saslCall(t, r, []byte{})
	if h.Err != jute.OK || h.Zxid != 0 {
		t.Fatalf("first sasl reply %+v, want OK with zxid 0", h)
	}
	var nonce, realm string
	for _, part := range strings.Split(string(challenge), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "nonce":
			nonce = strings.Trim(v, `"`)
		case "realm":
			realm = strings.Trim(v, `"`)
		}
	}
	if nonce == "" || realm != "zk-sasl-md5" {
		t.Fatalf("challenge %q: want a nonce and realm zk-sasl-md5", challenge)
	}
	const cnonce, uri = "Y2xpZW50bm9uY2U=", "zookeeper/zk-sasl-md5"
	ha1 := md5hex(md5raw(user+":"+realm+":"+password) + ":" + nonce + ":" + cnonce + ":" + authzid)
	digest := func(a2 string) string {
		return md5hex(ha1 + ":" + nonce + ":00000001:" + cnonce + ":auth:" + md5hex(a2))
	}
	resp := fmt.Sprintf(`charset=utf-8,username="%s",realm="%s",nonce="%s",nc=00000001,cnonce="%s",digest-uri="%s",maxbuf=65536,response=%s,qop=auth,authzid="%s"`,
		user, realm, nonce, cnonce, uri, digest("AUTHENTICATE:"+uri), authzid)
	h, final, took := saslCall(t, r, []byte(resp))
	if h.Err == jute.OK && final != nil && string(final) != "rspauth="+digest(":"+uri) {
		t.Errorf("rspauth %q, want %q", final, "rspauth="+digest(":"+uri))
	}
	return h, took
}

// saslSession opens a raw session.
func saslSession(t *testing.T, addr string) *rawClient {
	t.Helper()
	r := dialRaw(t, addr)
	if _, err := r.handshake(jute.ConnectRequest{TimeOut: 20000}); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return r
}

// hasID reports whether whoAmI lists scheme:user.
func hasID(info []jute.ClientInfo, scheme, user string) bool {
	return slices.Contains(info, jute.ClientInfo{AuthScheme: scheme, User: user})
}

// TestSASLDigestLogin logs in with DIGEST-MD5 and checks the identity in
// whoAmI and in ACLs, and the super user.
func TestSASLDigestLogin(t *testing.T) {
	srv := startServer(t, saslConfig(t, nil))
	addr := srv.Addr().String()

	bob := saslSession(t, addr)
	if h, _ := digestLogin(t, bob, "bob", "bobsecret"); h.Err != jute.OK {
		t.Fatalf("bob's login: %v", h.Err)
	}
	if info := aclWhoAmI(t, bob); !hasID(info, "sasl", "bob") || hasID(info, "super", "") {
		t.Fatalf("whoAmI after bob's login = %+v", info)
	}
	acl := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "sasl", ID: "bob"}}}
	if h, _ := bob.call(jute.OpCreate, &jute.CreateRequest{Path: "/s", Data: []byte("x"), ACL: acl}); h.Err != jute.OK {
		t.Fatalf("create with sasl:bob ACL: %v", h.Err)
	}
	read := func(r *rawClient) jute.Code {
		h, _ := r.call(jute.OpGetData, &jute.PathWatchRequest{Path: "/s"})
		return h.Err
	}
	if code := read(bob); code != jute.OK {
		t.Errorf("bob reads /s: %v", code)
	}
	if code := read(saslSession(t, addr)); code != jute.NoAuth {
		t.Errorf("anonymous client reads /s: %v, want NoAuth", code)
	}
	super := saslSession(t, addr)
	if h, _ := digestLogin(t, super, "super", "adminsecret"); h.Err != jute.OK {
		t.Fatalf("super's login: %v", h.Err)
	}
	if info := aclWhoAmI(t, super); !hasID(info, "sasl", "super") || !hasID(info, "super", "") {
		t.Errorf("whoAmI after super's login = %+v", info)
	}
	if code := read(super); code != jute.OK {
		t.Errorf("super reads /s: %v", code)
	}
	// As in ZooKeeper, the authorization id a client asks for is ignored:
	// bob asking to act as super is bob.
	asSuper := saslSession(t, addr)
	if h, _ := digestLoginAs(t, asSuper, "bob", "bobsecret", "super"); h.Err != jute.OK {
		t.Fatalf("bob's login with authzid super: %v", h.Err)
	}
	if info := aclWhoAmI(t, asSuper); !hasID(info, "sasl", "bob") || hasID(info, "super", "") || hasID(info, "sasl", "super") {
		t.Errorf("whoAmI after bob's login as super = %+v, want sasl:bob only", info)
	}
}

// TestSASLFailedLogin checks the answer to a wrong password: AuthFailed
// promptly and a closed connection, or with allowSaslFailedClients an empty
// OK and an open connection without the identity.
func TestSASLFailedLogin(t *testing.T) {
	tests := []struct {
		name   string
		adjust func(*conf.SASL)
		want   jute.Code
		closed bool
	}{
		{"default", nil, jute.AuthFailed, true},
		{"allowSaslFailedClients", func(s *conf.SASL) { s.AllowFailedClients = true }, jute.OK, false},
		{"sasl enforced", func(s *conf.SASL) { s.SessionRequireClientSASLAuth = true }, jute.SessionClosedRequireSaslAuth, true},
		{"sasl enforced wins over allowSaslFailedClients", func(s *conf.SASL) {
			s.AllowFailedClients, s.EnforceAuthEnabled, s.EnforceAuthSchemes = true, true, []string{"sasl"}
		}, jute.SessionClosedRequireSaslAuth, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, saslConfig(t, tt.adjust))
			r := saslSession(t, srv.Addr().String())
			h, took := digestLogin(t, r, "bob", "wrong")
			if h.Err != tt.want || h.Zxid != 0 {
				t.Fatalf("reply %+v, want %v with zxid 0", h, tt.want)
			}
			if took > 2*time.Second {
				t.Errorf("the reply took %v", took)
			}
			if tt.closed {
				r.expectClosed(5 * time.Second)
				return
			}
			if info := aclWhoAmI(t, r); hasID(info, "sasl", "bob") {
				t.Errorf("whoAmI after a failed login = %+v", info)
			}
		})
	}
}

// TestSASLWithoutJAAS checks that a server without a JAAS file answers a
// sasl request with an empty OK, as ZooKeeper does, instead of hanging.
func TestSASLWithoutJAAS(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	r := saslSession(t, srv.Addr().String())
	h, token, _ := saslCall(t, r, []byte{})
	if h.Err != jute.OK || h.Zxid != 0 || token != nil {
		t.Fatalf("reply %+v token %q, want OK, zxid 0, null token", h, token)
	}
	if info := aclWhoAmI(t, r); len(info) != 1 || info[0].AuthScheme != "ip" {
		t.Errorf("whoAmI = %+v, want the ip id only", info)
	}
}

// TestEnforcedAuth checks enforce.auth: a request of a connection without
// an identity of an enforced scheme gets SessionClosedRequireSaslAuth and
// the connection closes; an authenticated one is served.
func TestEnforcedAuth(t *testing.T) {
	tests := []struct {
		name    string
		schemes []string
		login   func(t *testing.T, r *rawClient) // nil: none
		ok      bool
	}{
		{"sasl, no login", []string{"sasl"}, nil, false},
		{"sasl, digest auth only", []string{"sasl"}, func(t *testing.T, r *rawClient) {
			if h := aclAuth(t, r, "digest", "u:p"); h.Err != jute.OK {
				t.Fatalf("digest auth: %v", h.Err)
			}
		}, false},
		{"sasl, SASL login", []string{"sasl"}, func(t *testing.T, r *rawClient) {
			if h, _ := digestLogin(t, r, "bob", "bobsecret"); h.Err != jute.OK {
				t.Fatalf("login: %v", h.Err)
			}
		}, true},
		{"sasl or digest, digest auth", []string{"sasl", "digest"}, func(t *testing.T, r *rawClient) {
			if h := aclAuth(t, r, "digest", "u:p"); h.Err != jute.OK {
				t.Fatalf("digest auth: %v", h.Err)
			}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, saslConfig(t, func(s *conf.SASL) {
				s.EnforceAuthEnabled, s.EnforceAuthSchemes = true, tt.schemes
			}))
			r := saslSession(t, srv.Addr().String())
			if tt.login != nil {
				tt.login(t, r)
			}
			h, _ := r.call(jute.OpExists, &jute.PathWatchRequest{Path: "/"})
			if tt.ok {
				if h.Err != jute.OK {
					t.Fatalf("exists: %v", h.Err)
				}
				return
			}
			if h.Err != jute.SessionClosedRequireSaslAuth || h.Zxid != 0 || h.Xid != r.xid {
				t.Fatalf("exists reply %+v, want SessionClosedRequireSaslAuth, zxid 0, xid %d", h, r.xid)
			}
			r.expectClosed(5 * time.Second)
		})
	}
}

// TestSASLConfigErrors checks that a server does not start with an enforced
// scheme that has no provider or an unreadable JAAS file.
func TestSASLConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		adjust func(*conf.Config)
		want   string
	}{
		{"enforced scheme without provider", func(c *conf.Config) {
			c.AuthProviders = map[int]string{}
			c.SASL.EnforceAuthEnabled, c.SASL.EnforceAuthSchemes = true, []string{"sasl"}
		}, "not available"},
		{"missing JAAS file", func(c *conf.Config) { c.SASL.JAASConfigFile = filepath.Join(t.TempDir(), "absent") }, "login.config"},
		{"bad JAAS file", func(c *conf.Config) {
			c.SASL.JAASConfigFile = filepath.Join(t.TempDir(), "bad.conf")
			if err := os.WriteFile(c.SASL.JAASConfigFile, []byte("Server { x required"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "JAAS syntax"},
		{"bad auth_to_local", func(c *conf.Config) { c.SASL.AuthToLocal = "RULE:[x:$1]" }, "auth_to_local"},
		{"required Kerberos configuration missing", func(c *conf.Config) {
			c.SASL.RequireKerberosConfig, c.SASL.Krb5ConfigFile = true, filepath.Join(t.TempDir(), "absent-krb5.conf")
		}, "requireKerberosConfig"},
	}
	for _, tt := range tests {
		cfg := saslConfig(t, nil)
		tt.adjust(&cfg)
		srv, err := server.New(server.Options{Config: cfg})
		if err == nil {
			srv.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: server.New error %v, want one mentioning %q", tt.name, err, tt.want)
		}
	}
}

// TestSASLJAASProperties: the JAAS file's ${...} take -D properties, and
// java.security.auth.login.config may be "=file:..." as for a JVM.
func TestSASLJAASProperties(t *testing.T) {
	cfg := saslConfig(t, nil)
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	text := "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_bob=\"${bob.password}\";\n};\n"
	if err := os.WriteFile(jaas, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.SASL.JAASConfigFile = "=file:${zk.conf.dir}/jaas.conf"
	cfg.SASL.JVMProperties = map[string]string{"bob.password": "from-jvmflags", "zk.conf.dir": dir}
	srv := startServer(t, cfg)
	bob := saslSession(t, srv.Addr().String())
	if h, _ := digestLogin(t, bob, "bob", "from-jvmflags"); h.Err != jute.OK {
		t.Fatalf("bob's login with the password from ${bob.password}: %v", h.Err)
	}
	if info := aclWhoAmI(t, bob); !hasID(info, "sasl", "bob") {
		t.Errorf("whoAmI = %+v, want sasl:bob", info)
	}
}

// TestSASLUnmappedName: a user name that no auth_to_local rule maps keeps
// its whole name (as ZooKeeper does), and is refused if it asks for
// another authorization id (which ZooKeeper would grant).
func TestSASLUnmappedName(t *testing.T) {
	cfg := saslConfig(t, nil)
	dir := t.TempDir()
	jaas, krb5 := filepath.Join(dir, "jaas.conf"), filepath.Join(dir, "krb5.conf")
	text := "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  \"user_amy@OTHER.COM\"=\"pw\";\n};\n"
	if err := os.WriteFile(jaas, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(krb5, []byte("[libdefaults]\n default_realm = EXAMPLE.COM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.SASL.JAASConfigFile, cfg.SASL.Krb5ConfigFile, cfg.SASL.RemoveRealmFromPrincipal = jaas, krb5, true
	srv := startServer(t, cfg)
	amy := saslSession(t, srv.Addr().String())
	if h, _ := digestLogin(t, amy, "amy@OTHER.COM", "pw"); h.Err != jute.OK {
		t.Fatalf("amy's login: %v", h.Err)
	}
	if info := aclWhoAmI(t, amy); !hasID(info, "sasl", "amy@OTHER.COM") {
		t.Errorf("whoAmI = %+v, want sasl:amy@OTHER.COM (unmapped, realm kept)", info)
	}
	asSuper := saslSession(t, srv.Addr().String())
	if h, _ := digestLoginAs(t, asSuper, "amy@OTHER.COM", "pw", "super"); h.Err != jute.AuthFailed {
		t.Errorf("unmapped amy asking to act as super: %v, want AuthFailed", h.Err)
	}
}
