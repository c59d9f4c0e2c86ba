package sasl

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// DigestMD5Client is the client side of RFC 2831 DIGEST-MD5 with qop
// "auth": it answers the server's challenge with a digest response and
// checks the server's rspauth, so both sides prove they know the password.
type DigestMD5Client struct {
	user, password string
	protocol       string // the digest-uri's service part, e.g. zookeeper-quorum
	step           digestStep
	params         DigestParams
}

// NewDigestMD5Client starts an exchange as user with password for a
// service named protocol; the digest-uri is protocol/realm, the realm
// being the one the server's challenge names.
func NewDigestMD5Client(user, password, protocol string) *DigestMD5Client {
	return &DigestMD5Client{user: user, password: password, protocol: protocol}
}

// Complete reports whether the server proved its knowledge of the
// password (its rspauth was right).
func (c *DigestMD5Client) Complete() bool { return c.step == stepDone }

// Evaluate answers a server token: the challenge gets the digest
// response, then rspauth gets an empty token and completes the exchange.
func (c *DigestMD5Client) Evaluate(token []byte) ([]byte, error) {
	var out []byte
	var err error
	switch c.step {
	case stepChallenge:
		out, err = c.respond(token)
	case stepResponse:
		err = c.checkRspAuth(token)
	default:
		err = fmt.Errorf("%w: DIGEST-MD5: token after the exchange ended", ErrFailed)
	}
	if err != nil {
		c.step = stepFailed
	}
	return out, err
}

// respond builds the digest-response to a challenge.
func (c *DigestMD5Client) respond(token []byte) ([]byte, error) {
	d, err := parseDirectives(string(token))
	if err != nil {
		return nil, fmt.Errorf("%w: DIGEST-MD5 challenge: %w", ErrFailed, err)
	}
	if d["nonce"] == "" {
		return nil, fmt.Errorf("%w: DIGEST-MD5 challenge without a nonce", ErrFailed)
	}
	if qop := d["qop"]; qop != "" && !containsToken(qop, "auth") {
		return nil, fmt.Errorf("%w: DIGEST-MD5 challenge offers qop %q, not auth", ErrFailed, qop)
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("%w: DIGEST-MD5: cnonce: %w", ErrFailed, err)
	}
	realm := d["realm"]
	c.params = DigestParams{
		Username: c.user, Realm: realm, Password: c.password, Nonce: d["nonce"],
		CNonce: hex.EncodeToString(raw[:]), NC: "00000001",
		DigestURI: c.protocol + "/" + realm, UTF8: strings.EqualFold(d["charset"], "utf-8"),
	}
	p := c.params
	var b strings.Builder
	if p.UTF8 {
		b.WriteString("charset=utf-8,")
	}
	fmt.Fprintf(&b, `username=%s,realm=%s,nonce=%s,nc=%s,cnonce=%s,digest-uri=%s,maxbuf=65536,response=%s,qop=auth`,
		quote(p.Username), quote(p.Realm), quote(p.Nonce), p.NC, quote(p.CNonce), quote(p.DigestURI), p.Response())
	c.step = stepResponse
	return []byte(b.String()), nil
}

// checkRspAuth verifies the server's rspauth.
func (c *DigestMD5Client) checkRspAuth(token []byte) error {
	d, err := parseDirectives(string(token))
	if err != nil {
		return fmt.Errorf("%w: DIGEST-MD5 rspauth: %w", ErrFailed, err)
	}
	want := c.params.RspAuth()
	if subtle.ConstantTimeCompare([]byte(strings.ToLower(d["rspauth"])), []byte(want)) != 1 {
		return fmt.Errorf("%w: DIGEST-MD5: the server's rspauth is wrong (it does not know the password)", ErrFailed)
	}
	c.step = stepDone
	return nil
}

// containsToken reports whether a comma list holds tok.
func containsToken(list, tok string) bool {
	for item := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(item) == tok {
			return true
		}
	}
	return false
}

// quote makes a quoted-string, escaping quotes and backslashes.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// krb5LoginModule is the JAAS class of Java's Kerberos login.
const krb5LoginModule = "com.sun.security.auth.module.Krb5LoginModule"

// UsesKerberos reports whether a JAAS section logs in with Kerberos
// (a Krb5LoginModule entry).
func (j JAAS) UsesKerberos(section string) bool {
	for _, m := range j[section] {
		if m.Class == krb5LoginModule || strings.HasSuffix(m.Class, ".Krb5LoginModule") {
			return true
		}
	}
	return false
}

// Credentials returns the username and password options of a section's
// first module that has a username (a DigestLoginModule client entry, as
// ZooKeeper's Client and QuorumLearner sections write them).
func (j JAAS) Credentials(section string) (user, password string, ok bool) {
	for _, m := range j[section] {
		if u, has := m.Options["username"]; has {
			return u, m.Options["password"], true
		}
	}
	return "", "", false
}
