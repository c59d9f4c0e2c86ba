package acl

import (
	"crypto/sha1" // the digest scheme is defined with SHA-1
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/zkserverd/zkserverd/jute"
)

// DigestProvider is the digest scheme: "user:password" credentials whose id
// is "user:" + base64(SHA-1("user:password")). Super-digest handling lives in
// Registry.Authenticate.
type DigestProvider struct{}

var (
	_ Provider  = DigestProvider{}
	_ UserNamer = DigestProvider{}
)

// Digest is the digest scheme's id for the raw text of an auth packet:
// the text before the first ':' (all of it if there is none), a ':', and the
// base64 of the SHA-1 of the whole text.
// Digest("alice:secret") == "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=".
func Digest(userPassword string) string {
	user, _, _ := strings.Cut(userPassword, ":")
	sum := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// Scheme implements Provider.
func (DigestProvider) Scheme() string { return SchemeDigest }

// Authenticate implements Provider: it always succeeds. The bytes are read
// as UTF-8 with invalid bytes replaced by U+FFFD, as Java's new String(bytes)
// does, before hashing.
func (DigestProvider) Authenticate(_ ConnInfo, auth []byte) ([]jute.ID, error) {
	return []jute.ID{{Scheme: SchemeDigest, ID: Digest(javaDecodeUTF8(auth))}}, nil
}

// javaDecodeUTF8 turns bytes into valid UTF-8, one U+FFFD per invalid byte.
func javaDecodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		sb.WriteRune(r)
		b = b[size:]
	}
	return sb.String()
}

// Matches implements Provider: ids must be equal.
func (DigestProvider) Matches(id, aclExpr string) bool { return id == aclExpr }

// IsValid implements Provider: the id must split on ':' into exactly two
// parts, with Java's split rules (trailing empty parts are dropped, so
// "alice:" and "a:b:" differ: one part versus two).
func (DigestProvider) IsValid(id string) bool { return len(javaSplit(id, ":")) == 2 }

// IsAuthenticated implements Provider.
func (DigestProvider) IsAuthenticated() bool { return true }

// UserName implements UserNamer: the text before the first ':'.
func (DigestProvider) UserName(id string) string {
	user, _, _ := strings.Cut(id, ":")
	return user
}
