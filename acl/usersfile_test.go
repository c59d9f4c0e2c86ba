package acl

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// testdata/users.txt was written with Python's hashlib.pbkdf2_hmac, an
// implementation independent of ours.
const usersFile = "testdata/users.txt"

func TestUsersFileAuthenticate(t *testing.T) {
	p, err := NewUsersFileProvider(usersFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		auth string
		want string // "" means rejected
	}{
		{"alice", "alice:secret", "alice"},
		{"password with colons", "bob:pa:ss:word", "bob"},
		{"indented line, empty password", "carol:", "carol"},
		{"non-ASCII password", "dave:été", "dave"},
		{"wrong password", "alice:Secret", ""},
		{"truncated password", "bob:pa", ""},
		{"unknown user", "mallory:secret", ""},
		{"no colon", "alice", ""},
		{"empty", "", ""},
		{"comment is not a user", "# zkserverd users file for tests:x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, err := p.Authenticate(ConnInfo{}, []byte(tt.auth))
			if tt.want == "" {
				if !errors.Is(err, ErrAuthFailed) || ids != nil {
					t.Fatalf("Authenticate = %v, %v; want ErrAuthFailed", ids, err)
				}
				return
			}
			if want := []jute.ID{id(SchemeUsersFile, tt.want)}; err != nil || !slices.Equal(ids, want) {
				t.Fatalf("Authenticate = %v, %v; want %v", ids, err, want)
			}
		})
	}
}

// TestUsersFileEndToEnd runs the provider through a registry: addauth, an
// ACL naming the user, and the auth pseudo-scheme.
func TestUsersFileEndToEnd(t *testing.T) {
	p, err := NewProviderByName(SchemeUsersFile, map[string]string{"path": usersFile})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(Options{})
	if err := r.Register(p); err != nil {
		t.Fatal(err)
	}
	ids, err := r.Authenticate(SchemeUsersFile, ConnInfo{}, []byte("alice:secret"))
	if err != nil {
		t.Fatal(err)
	}
	acl, code := r.FixupACL([]jute.ACL{entry(jute.PermRead, SchemeUsersFile, "alice"), entry(jute.PermAll, SchemeAuth, "")}, ids)
	if want := []jute.ACL{entry(jute.PermRead, SchemeUsersFile, "alice"), entry(jute.PermAll, SchemeUsersFile, "alice")}; code != jute.OK || !slices.Equal(acl, want) {
		t.Fatalf("FixupACL = %v, %v; want %v", acl, code, want)
	}
	if !r.Allowed([]jute.ACL{entry(jute.PermWrite, SchemeUsersFile, "alice")}, ids, jute.PermWrite) {
		t.Fatal("alice denied on usersfile:alice")
	}
	if r.Allowed([]jute.ACL{entry(jute.PermWrite, SchemeUsersFile, "bob")}, ids, jute.PermWrite) {
		t.Fatal("alice allowed on usersfile:bob")
	}
	if _, err := r.Authenticate(SchemeUsersFile, ConnInfo{}, []byte("alice:nope")); !errors.Is(err, jute.AuthFailed) {
		t.Fatalf("bad password err = %v, want AuthFailed", err)
	}
	for in, want := range map[string]bool{"alice": true, "unknown-but-wellformed": true, "": false, "a:b": false, "a b": false} {
		if got := p.IsValid(in); got != want {
			t.Errorf("IsValid(%q) = %v, want %v", in, got, want)
		}
	}
}

// writeFile writes content to a temporary users file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUsersFileMalformed(t *testing.T) {
	good, err := hashPasswordWith("pw", []byte("0123456789abcdef"), minHashIterations)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"no colon":          "alice\n",
		"empty user":        ":" + good + "\n",
		"space in user":     "al ice:" + good + "\n",
		"duplicate user":    "a:" + good + "\na:" + good + "\n",
		"unknown algorithm": "a:bcrypt$10$x$y\n",
		"too few fields":    "a:pbkdf2-sha256$1000$c2FsdHNhbHQ\n",
		"few iterations":    "a:" + strings.Replace(good, "$1000$", "$999$", 1) + "\n",
		"many iterations":   "a:" + strings.Replace(good, "$1000$", "$10000001$", 1) + "\n",
		"bad iterations":    "a:" + strings.Replace(good, "$1000$", "$1e3$", 1) + "\n",
		"short salt":        "a:pbkdf2-sha256$1000$c2FsdA$" + strings.Repeat("A", 43) + "\n",
		"padded base64":     "a:" + good + "=\n",
		"short key":         "a:pbkdf2-sha256$1000$c2FsdHNhbHQ$c2hvcnQ\n",
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := NewUsersFileProvider(writeFile(t, content)); !errors.Is(err, ErrBadUsersFile) {
				t.Fatalf("err = %v, want ErrBadUsersFile", err)
			}
		})
	}
	if _, err := NewUsersFileProvider(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, ErrBadUsersFile) {
		t.Fatalf("missing file err = %v, want ErrBadUsersFile", err)
	}
}

func TestUsersFileReload(t *testing.T) {
	salt := []byte("0123456789abcdef")
	h1, _ := hashPasswordWith("one", salt, minHashIterations)
	h2, _ := hashPasswordWith("two", salt, minHashIterations)
	path := writeFile(t, "u:"+h1+"\n")
	p, err := NewUsersFileProvider(path)
	if err != nil {
		t.Fatal(err)
	}
	auth := func(pw string) bool { _, err := p.Authenticate(ConnInfo{}, []byte("u:"+pw)); return err == nil }
	if !auth("one") || auth("two") {
		t.Fatal("initial file not in effect")
	}
	if err := os.WriteFile(path, []byte("u:"+h2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(); err != nil {
		t.Fatal(err)
	}
	if auth("one") || !auth("two") {
		t.Fatal("reloaded file not in effect")
	}
	if err := os.WriteFile(path, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(); !errors.Is(err, ErrBadUsersFile) {
		t.Fatalf("Reload of a bad file = %v", err)
	}
	if !auth("two") {
		t.Fatal("a failed reload dropped the previous users")
	}
}

// TestPBKDF2Vector pins the key derivation to RFC 7914 §11's
// PBKDF2-HMAC-SHA256 test vector (first 32 bytes).
func TestPBKDF2Vector(t *testing.T) {
	line, err := hashPasswordWith("passwd", []byte("salt"), 1)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Split(line, "$")
	if len(fields) != 4 || fields[0] != hashPrefix || fields[1] != "1" {
		t.Fatalf("hash %q does not have the documented layout", line)
	}
	key, err := base64.RawStdEncoding.DecodeString(fields[3])
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hex.DecodeString("55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc")
	if !slices.Equal(key, want) {
		t.Fatalf("key = %x, want %x", key, want)
	}
}

func TestHashPasswordRoundTrip(t *testing.T) {
	line1, err := hashPasswordIterations("s3cret:x", minHashIterations)
	if err != nil {
		t.Fatal(err)
	}
	line2, err := hashPasswordIterations("s3cret:x", minHashIterations)
	if err != nil {
		t.Fatal(err)
	}
	if line1 == line2 {
		t.Fatal("two hashes of one password are equal: salt not random")
	}
	h, err := parseHash(line1)
	if err != nil {
		t.Fatalf("hash does not parse: %v", err)
	}
	if !h.verify("s3cret:x") || h.verify("s3cret") {
		t.Fatal("verify disagrees with the hash")
	}
}

// TestHashPassword checks the parameters HashPassword writes; verifying
// its output would cost another DefaultHashIterations rounds.
func TestHashPassword(t *testing.T) {
	line, err := HashPassword("pw")
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHash(line)
	if err != nil {
		t.Fatalf("HashPassword output does not parse: %v", err)
	}
	if h.iterations != DefaultHashIterations || len(h.salt) != saltLen || len(h.key) != keyLen {
		t.Fatalf("hash parameters = %d iterations, %d-byte salt, %d-byte key", h.iterations, len(h.salt), len(h.key))
	}
}

func TestNewProviderByName(t *testing.T) {
	tests := []struct {
		name    string
		params  map[string]string
		scheme  string
		wantErr error
	}{
		{"ip", nil, SchemeIP, nil},
		{"org.apache.zookeeper.server.auth.IPAuthenticationProvider", nil, SchemeIP, nil},
		{"digest", nil, SchemeDigest, nil},
		{"org.apache.zookeeper.server.auth.DigestAuthenticationProvider", nil, SchemeDigest, nil},
		{"x509", nil, SchemeX509, nil},
		{"org.apache.zookeeper.server.auth.X509AuthenticationProvider", map[string]string{"X509AuthenticationProvider.superUser": "CN=root"}, SchemeX509, nil},
		{"usersfile", map[string]string{"zookeeper.usersfile.path": usersFile}, SchemeUsersFile, nil},
		{"usersfile", nil, "", ErrBadParams},
		{"usersfile", map[string]string{"path": "testdata/missing"}, "", ErrBadUsersFile},
		{"org.apache.zookeeper.server.auth.SASLAuthenticationProvider", nil, SchemeSASL, nil},
		{"sasl", nil, SchemeSASL, nil},
		{"org.apache.zookeeper.server.auth.KeyAuthenticationProvider", nil, "", ErrUnsupportedProvider},
		{"com.example.Custom", nil, "", ErrUnknownProvider},
		{"", nil, "", ErrUnknownProvider},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewProviderByName(tt.name, tt.params)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || p.Scheme() != tt.scheme {
				t.Fatalf("NewProviderByName = %v, %v; want scheme %s", p, err, tt.scheme)
			}
		})
	}
	p, _ := NewProviderByName("x509", map[string]string{"zookeeper.X509AuthenticationProvider.superUser": "CN=root"})
	if !p.Matches("CN=root", "CN=other") {
		t.Fatal("x509 superUser parameter ignored")
	}
}
