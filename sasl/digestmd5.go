package sasl

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The fixed names ZooKeeper's DIGEST-MD5 exchange uses: the server is
// created for protocol "zookeeper" and server name "zk-sasl-md5", which is
// also its realm, and the Java and kazoo clients send that digest-uri.
const (
	DigestRealm = "zk-sasl-md5"
	DigestURI   = "zookeeper/zk-sasl-md5"
)

// digestStep is where a DIGEST-MD5 exchange stands.
type digestStep int

const (
	stepChallenge digestStep = iota // next: send the challenge
	stepResponse                    // next: verify the client's response
	stepDone                        // authenticated
	stepFailed                      // failed; every later token fails
)

// DigestMD5Server is the server side of RFC 2831 DIGEST-MD5 with qop
// "auth": a challenge, the client's digest response, and rspauth.
type DigestMD5Server struct {
	users map[string]string
	realm string // the server name, also the realm
	uri   string // the digest-uri clients must send: protocol/realm
	step  digestStep
	nonce string
	user  string
	authz string
}

// NewDigestMD5Server starts an exchange against users (name -> password).
// It serves ZooKeeper's client-port names (DigestRealm, DigestURI).
func NewDigestMD5Server(users map[string]string) *DigestMD5Server {
	return &DigestMD5Server{users: users, realm: DigestRealm, uri: DigestURI}
}

// NewDigestMD5ServerFor starts an exchange against users for another
// protocol and server name (the realm; digest-uri protocol/serverName).
func NewDigestMD5ServerFor(users map[string]string, protocol, serverName string) *DigestMD5Server {
	return &DigestMD5Server{users: users, realm: serverName, uri: protocol + "/" + serverName}
}

// Complete reports whether the client has authenticated.
func (s *DigestMD5Server) Complete() bool { return s.step == stepDone }

// AuthenticationID is the authenticated user name.
func (s *DigestMD5Server) AuthenticationID() string { return s.user }

// AuthorizationID is the response's authzid ("" when it has none).
func (s *DigestMD5Server) AuthorizationID() string { return s.authz }

// Evaluate runs one step of the exchange.
func (s *DigestMD5Server) Evaluate(token []byte) ([]byte, error) {
	var out []byte
	var err error
	switch s.step {
	case stepChallenge:
		out, err = s.challenge(token)
	case stepResponse:
		out, err = s.verify(token)
	default:
		err = fmt.Errorf("%w: DIGEST-MD5: token after the exchange ended", ErrFailed)
	}
	if err != nil {
		s.step = stepFailed
	}
	return out, err
}

// challenge builds the digest-challenge; DIGEST-MD5 has no initial response.
func (s *DigestMD5Server) challenge(token []byte) ([]byte, error) {
	if len(token) != 0 {
		return nil, fmt.Errorf("%w: DIGEST-MD5: unexpected initial response", ErrFailed)
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("%w: DIGEST-MD5: nonce: %w", ErrFailed, err)
	}
	s.nonce = base64.StdEncoding.EncodeToString(raw[:])
	s.step = stepResponse
	return []byte(`realm="` + s.realm + `",nonce="` + s.nonce + `",qop="auth",charset=utf-8,algorithm=md5-sess`), nil
}

// verify checks a digest-response and returns rspauth.
func (s *DigestMD5Server) verify(token []byte) ([]byte, error) {
	d, err := parseDirectives(string(token))
	if err != nil {
		return nil, fmt.Errorf("%w: DIGEST-MD5: %w", ErrFailed, err)
	}
	if err := s.checkFields(d); err != nil {
		return nil, fmt.Errorf("%w: DIGEST-MD5: %w", ErrFailed, err)
	}
	password, ok := s.users[d["username"]]
	if !ok {
		return nil, fmt.Errorf("%w: DIGEST-MD5: unknown user %q", ErrFailed, d["username"])
	}
	p := DigestParams{
		Username: d["username"], Realm: d["realm"], Password: password, Nonce: s.nonce,
		CNonce: d["cnonce"], NC: d["nc"], DigestURI: d["digest-uri"], AuthzID: d["authzid"],
		UTF8: strings.EqualFold(d["charset"], "utf-8"),
	}
	want := p.Response()
	if subtle.ConstantTimeCompare([]byte(strings.ToLower(d["response"])), []byte(want)) != 1 {
		return nil, fmt.Errorf("%w: DIGEST-MD5: wrong password for %q", ErrFailed, d["username"])
	}
	s.user, s.authz = d["username"], d["authzid"]
	s.step = stepDone
	return []byte("rspauth=" + p.RspAuth()), nil
}

// checkFields checks the directives of a response other than its digest.
func (s *DigestMD5Server) checkFields(d map[string]string) error {
	for _, k := range []string{"username", "nonce", "cnonce", "nc", "response", "digest-uri"} {
		if _, ok := d[k]; !ok {
			return fmt.Errorf("response without %s", k)
		}
	}
	switch {
	case d["nonce"] != s.nonce:
		return fmt.Errorf("nonce mismatch")
	case d["nc"] != "00000001":
		return fmt.Errorf("nonce count %q is not 00000001", d["nc"])
	case d["qop"] != "" && d["qop"] != "auth":
		return fmt.Errorf("qop %q is not supported", d["qop"])
	case !strings.EqualFold(d["digest-uri"], s.uri):
		return fmt.Errorf("digest-uri %q is not %s", d["digest-uri"], s.uri)
	case d["realm"] != "" && d["realm"] != s.realm:
		return fmt.Errorf("realm %q is not %s", d["realm"], s.realm)
	}
	return nil
}

// DigestParams are the inputs of the RFC 2831 digests (qop "auth").
type DigestParams struct {
	Username, Realm, Password string
	Nonce, CNonce, NC         string
	DigestURI, AuthzID        string
	// UTF8 is true when the client declared charset=utf-8; otherwise the
	// user name, realm and password are hashed in ISO 8859-1 when they fit.
	UTF8 bool
}

// Response is the client's "response" value: lower-case hex.
func (p DigestParams) Response() string { return p.digest("AUTHENTICATE:" + p.DigestURI) }

// RspAuth is the server's "rspauth" value.
func (p DigestParams) RspAuth() string { return p.digest(":" + p.DigestURI) }

// digest is HEX(KD(HEX(H(A1)), nonce:nc:cnonce:auth:HEX(H(A2)))).
func (p DigestParams) digest(a2 string) string {
	secret := md5.Sum([]byte(p.text(p.Username) + ":" + p.text(p.Realm) + ":" + p.text(p.Password)))
	a1 := string(secret[:]) + ":" + p.Nonce + ":" + p.CNonce
	if p.AuthzID != "" {
		a1 += ":" + p.AuthzID
	}
	ha1 := md5Hex(a1)
	return md5Hex(ha1 + ":" + p.Nonce + ":" + p.NC + ":" + p.CNonce + ":auth:" + md5Hex(a2))
}

// text encodes a user name, realm or password for hashing (RFC 2831 2.1.2.1).
func (p DigestParams) text(s string) string {
	if p.UTF8 {
		return s
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff || r == utf8.RuneError {
			return s
		}
		b = append(b, byte(r))
	}
	return string(b)
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// parseDirectives parses name=value pairs separated by commas; values may
// be quoted strings with backslash escapes. A repeated name is an error.
func parseDirectives(s string) (map[string]string, error) {
	out := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t\r\n,")
		if s == "" {
			return out, nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("malformed directive %q", s)
		}
		name := strings.ToLower(strings.TrimSpace(s[:eq]))
		s = strings.TrimLeft(s[eq+1:], " \t")
		var value string
		if strings.HasPrefix(s, `"`) {
			v, n, err := quoted(s)
			if err != nil {
				return nil, fmt.Errorf("directive %s: %w", name, err)
			}
			value, s = v, s[n:]
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			value, s = strings.TrimSpace(s[:end]), s[end:]
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("directive %s repeated", name)
		}
		out[name] = value
		s = strings.TrimLeft(s, " \t")
		if s != "" && s[0] != ',' {
			return nil, fmt.Errorf("junk after directive %s", name)
		}
	}
}

// quoted reads a double-quoted string at the start of s, with backslash
// escapes, and returns its value and the bytes it spans.
func quoted(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, errors.New("unterminated quoted string")
}
