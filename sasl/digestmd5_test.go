package sasl

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestDigestRFC2831Example checks the digests against the example of RFC
// 2831 section 4 (IMAP, user chris, password secret).
func TestDigestRFC2831Example(t *testing.T) {
	p := DigestParams{
		Username: "chris", Realm: "elwood.innosoft.com", Password: "secret",
		Nonce: "OA6MG9tEQGm2hh", CNonce: "OA6MHXh6VqTrRk", NC: "00000001",
		DigestURI: "imap/elwood.innosoft.com", UTF8: true,
	}
	if got, want := p.Response(), "d388dad90d4bbd760a152321f2143af7"; got != want {
		t.Errorf("response = %s, want %s", got, want)
	}
	if got, want := p.RspAuth(), "ea40f60335c427b5527b84dbabcdfffd"; got != want {
		t.Errorf("rspauth = %s, want %s", got, want)
	}
}

// testClient is a DIGEST-MD5 client written from RFC 2831 for the tests:
// it answers a challenge with a digest-response.
type testClient struct {
	user, password, authzid, uri, cnonce string
	nonce, realm                         string
}

func h(s string) string { sum := md5.Sum([]byte(s)); return string(sum[:]) }

func hexh(s string) string { return hex.EncodeToString([]byte(h(s))) }

// respond parses the challenge's realm and nonce and builds the response.
func (c *testClient) respond(t *testing.T, challenge []byte) []byte {
	t.Helper()
	for _, part := range strings.Split(string(challenge), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "realm":
			c.realm = strings.Trim(v, `"`)
		case "nonce":
			c.nonce = strings.Trim(v, `"`)
		}
	}
	if c.nonce == "" {
		t.Fatalf("challenge %q has no nonce", challenge)
	}
	a1 := h(c.user+":"+c.realm+":"+c.password) + ":" + c.nonce + ":" + c.cnonce
	if c.authzid != "" {
		a1 += ":" + c.authzid
	}
	resp := hexh(hexh(a1) + ":" + c.nonce + ":00000001:" + c.cnonce + ":auth:" + hexh("AUTHENTICATE:"+c.uri))
	out := fmt.Sprintf(`charset=utf-8,username="%s",realm="%s",nonce="%s",nc=00000001,cnonce="%s",digest-uri="%s",maxbuf=65536,response=%s,qop=auth`,
		c.user, c.realm, c.nonce, c.cnonce, c.uri, resp)
	if c.authzid != "" {
		out += `,authzid="` + c.authzid + `"`
	}
	return []byte(out)
}

// wantRspAuth is the rspauth the client expects.
func (c *testClient) wantRspAuth() string {
	a1 := h(c.user+":"+c.realm+":"+c.password) + ":" + c.nonce + ":" + c.cnonce
	if c.authzid != "" {
		a1 += ":" + c.authzid
	}
	return "rspauth=" + hexh(hexh(a1)+":"+c.nonce+":00000001:"+c.cnonce+":auth:"+hexh(":"+c.uri))
}

func TestDigestMD5Server(t *testing.T) {
	users := map[string]string{"bob": "bobsecret", "super": "adminsecret", "üser": "pässword"}
	tests := []struct {
		name   string
		client testClient
		ok     bool
	}{
		{"good password", testClient{user: "bob", password: "bobsecret", uri: DigestURI}, true},
		{"good password with authzid (Java client)", testClient{user: "bob", password: "bobsecret", authzid: "bob", uri: DigestURI}, true},
		{"authzid of another user: the identity is decided later", testClient{user: "bob", password: "bobsecret", authzid: "super", uri: DigestURI}, true},
		{"non-ASCII user and password", testClient{user: "üser", password: "pässword", uri: DigestURI}, true},
		{"wrong password", testClient{user: "bob", password: "nope", uri: DigestURI}, false},
		{"unknown user", testClient{user: "eve", password: "bobsecret", uri: DigestURI}, false},
		{"wrong digest-uri", testClient{user: "bob", password: "bobsecret", uri: "zookeeper/localhost"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewDigestMD5Server(users)
			c := tt.client
			c.cnonce = "cn0nce"
			challenge, err := s.Evaluate(nil)
			if err != nil {
				t.Fatalf("first step: %v", err)
			}
			if !strings.Contains(string(challenge), `realm="zk-sasl-md5"`) || !strings.Contains(string(challenge), "algorithm=md5-sess") {
				t.Errorf("challenge %q lacks realm or algorithm", challenge)
			}
			final, err := s.Evaluate(c.respond(t, challenge))
			if !tt.ok {
				if !errors.Is(err, ErrFailed) || s.Complete() {
					t.Fatalf("response accepted (err %v, complete %v)", err, s.Complete())
				}
				if _, err := s.Evaluate(nil); !errors.Is(err, ErrFailed) {
					t.Errorf("token after failure: err %v", err)
				}
				return
			}
			if err != nil || !s.Complete() {
				t.Fatalf("response refused: %v (complete %v)", err, s.Complete())
			}
			if string(final) != c.wantRspAuth() {
				t.Errorf("final token %q, want %q", final, c.wantRspAuth())
			}
			if s.AuthenticationID() != c.user {
				t.Errorf("AuthenticationID = %q, want %q", s.AuthenticationID(), c.user)
			}
			if s.AuthorizationID() != c.authzid {
				t.Errorf("AuthorizationID = %q, want %q", s.AuthorizationID(), c.authzid)
			}
			if _, err := s.Evaluate([]byte("x")); !errors.Is(err, ErrFailed) {
				t.Errorf("token after success: err %v", err)
			}
		})
	}
}

func TestDigestMD5ServerBadTokens(t *testing.T) {
	users := map[string]string{"bob": "bobsecret"}
	if _, err := NewDigestMD5Server(users).Evaluate([]byte("initial")); !errors.Is(err, ErrFailed) {
		t.Errorf("initial response accepted: %v", err)
	}
	for _, resp := range []string{
		"", "garbage", `username="bob`, `username="bob",username="bob"`,
		`username="bob",realm="zk-sasl-md5",nonce="other",nc=00000001,cnonce="c",digest-uri="zookeeper/zk-sasl-md5",response=00,qop=auth`,
		`username="bob",realm="zk-sasl-md5",nonce="NONCE",nc=00000002,cnonce="c",digest-uri="zookeeper/zk-sasl-md5",response=00,qop=auth`,
		`username="bob",realm="zk-sasl-md5",nonce="NONCE",nc=00000001,cnonce="c",digest-uri="zookeeper/zk-sasl-md5",response=00,qop=auth-conf`,
		`username="bob",realm="elsewhere",nonce="NONCE",nc=00000001,cnonce="c",digest-uri="zookeeper/zk-sasl-md5",response=00,qop=auth`,
		`username="bob",realm="zk-sasl-md5",nonce="NONCE",nc=00000001,cnonce="c",digest-uri="zookeeper/zk-sasl-md5",qop=auth`,
	} {
		s := NewDigestMD5Server(users)
		if _, err := s.Evaluate(nil); err != nil {
			t.Fatal(err)
		}
		resp = strings.ReplaceAll(resp, "NONCE", s.nonce)
		if _, err := s.Evaluate([]byte(resp)); !errors.Is(err, ErrFailed) || s.Complete() {
			t.Errorf("response %q: err %v, complete %v", resp, err, s.Complete())
		}
	}
}

func TestNewFactory(t *testing.T) {
	j := JAAS{
		"Server":   {{Class: "x.DigestLoginModule", Flag: "required", Options: map[string]string{"user_super": "a", "user_bob": "b"}}},
		"Kerberos": {{Class: Krb5LoginModule, Flag: "required", Options: map[string]string{"principal": "zk/h@R"}}},
		"Other":    {{Class: "x.Other", Flag: "required", Options: map[string]string{}}},
	}
	if st, err := NewFactory(j, Options{Section: "Missing"}); err != nil || st.Factory != nil || st.Reason == "" {
		t.Errorf("missing section: %+v, %v", st, err)
	}
	if st, err := NewFactory(j, Options{Section: "Other"}); err != nil || st.Factory != nil || st.Reason == "" {
		t.Errorf("section without users or Kerberos: %+v, %v", st, err)
	}
	if _, err := NewFactory(j, Options{Section: "Kerberos"}); err == nil || !strings.Contains(err.Error(), "useKeyTab") {
		t.Errorf("Kerberos module without a keytab: err %v", err)
	}
	st, err := NewFactory(j, Options{Section: "Server", SuperPassword: "override"})
	if err != nil || st.Factory == nil {
		t.Fatalf("Server section: no factory: %+v, %v", st, err)
	}
	if len(st.Mechanisms) != 1 || st.Mechanisms[0] != "DIGEST-MD5" {
		t.Errorf("mechanisms %v, want [DIGEST-MD5]", st.Mechanisms)
	}
	c := st.Factory().(*chooser)
	if _, err := c.Evaluate(nil); err != nil {
		t.Fatalf("first DIGEST-MD5 step: %v", err)
	}
	m := c.m.(*DigestMD5Server)
	if m.users["super"] != "override" || m.users["bob"] != "b" {
		t.Errorf("users = %v", m.users)
	}
	if j["Server"][0].Options["user_super"] != "a" {
		t.Error("NewFactory changed the JAAS options")
	}
}

// FuzzDigestMD5Server feeds a DIGEST-MD5 server a client's two tokens as a
// client on the network could send them: whatever they hold, Evaluate
// answers with a token or an error, never a panic, and only the right
// password completes the login.
func FuzzDigestMD5Server(f *testing.F) {
	f.Add([]byte{}, []byte(`username="bob",realm="zk-sasl-md5",nonce="x",nc=00000001,cnonce="y",digest-uri="zookeeper/zk-sasl-md5",maxbuf=65536,response=0123456789abcdef0123456789abcdef,qop=auth,charset=utf-8`))
	f.Add([]byte{}, []byte(`username=bob,,=,"`))
	f.Add([]byte("initial"), []byte{})
	f.Fuzz(func(t *testing.T, first, second []byte) {
		s := NewDigestMD5Server(map[string]string{"bob": "bobsecret"})
		if _, err := s.Evaluate(first); err != nil {
			return
		}
		if _, err := s.Evaluate(second); err == nil && !s.Complete() {
			t.Fatal("a second token accepted without completing the login")
		}
		if s.Complete() {
			t.Fatalf("a fuzzed response (which cannot know the server's nonce) logged in as %q", s.AuthenticationID())
		}
	})
}
