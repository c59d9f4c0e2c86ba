package acl

import (
	"bufio"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/zkserverd/zkserverd/jute"
)

// SchemeUsersFile is the scheme of UsersFileProvider.
const SchemeUsersFile = "usersfile"

// Password hashes in a users file are PBKDF2-HMAC-SHA256 (RFC 8018) with a
// random salt, written as
//
//	pbkdf2-sha256$<iterations>$<salt>$<key>
//
// with salt and key in unpadded standard base64.
const (
	hashPrefix = "pbkdf2-sha256"
	// DefaultHashIterations is the PBKDF2 iteration count HashPassword uses
	// (OWASP's 2023 recommendation for PBKDF2-HMAC-SHA256).
	DefaultHashIterations = 600_000
	minHashIterations     = 1_000
	maxHashIterations     = 10_000_000
	saltLen               = 16
	keyLen                = 32
)

// ErrBadUsersFile means a users file could not be read or parsed.
var ErrBadUsersFile = errors.New("acl: bad users file")

// passwordHash is one parsed hash.
type passwordHash struct {
	iterations int
	salt, key  []byte
}

// HashPassword returns a hash of pw for a users file line "user:<hash>",
// with a fresh random salt and DefaultHashIterations.
func HashPassword(pw string) (string, error) {
	return hashPasswordIterations(pw, DefaultHashIterations)
}

// hashPasswordIterations hashes pw with a fresh random salt.
func hashPasswordIterations(pw string, iterations int) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("acl: hash password: %w", err)
	}
	return hashPasswordWith(pw, salt, iterations)
}

// hashPasswordWith hashes pw with a given salt and iteration count.
func hashPasswordWith(pw string, salt []byte, iterations int) (string, error) {
	key, err := pbkdf2.Key(sha256.New, pw, salt, iterations, keyLen)
	if err != nil {
		return "", fmt.Errorf("acl: hash password: %w", err)
	}
	enc := base64.RawStdEncoding
	return fmt.Sprintf("%s$%d$%s$%s", hashPrefix, iterations, enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

// parseHash parses the hash part of a users file line.
func parseHash(s string) (passwordHash, error) {
	fields := strings.Split(s, "$")
	if len(fields) != 4 || fields[0] != hashPrefix {
		return passwordHash{}, fmt.Errorf("hash is not %s$<iterations>$<salt>$<key>", hashPrefix)
	}
	iter, err := strconv.Atoi(fields[1])
	if err != nil || iter < minHashIterations || iter > maxHashIterations {
		return passwordHash{}, fmt.Errorf("iterations %q not in %d..%d", fields[1], minHashIterations, maxHashIterations)
	}
	salt, err := base64.RawStdEncoding.DecodeString(fields[2])
	if err != nil || len(salt) < 8 {
		return passwordHash{}, errors.New("salt is not base64 of at least 8 bytes")
	}
	key, err := base64.RawStdEncoding.DecodeString(fields[3])
	if err != nil || len(key) < 16 {
		return passwordHash{}, errors.New("key is not base64 of at least 16 bytes")
	}
	return passwordHash{iterations: iter, salt: salt, key: key}, nil
}

// verify reports, in constant time for a given hash, whether pw matches.
func (h passwordHash) verify(pw string) bool {
	key, err := pbkdf2.Key(sha256.New, pw, h.salt, h.iterations, len(h.key))
	return err == nil && subtle.ConstantTimeCompare(key, h.key) == 1
}

// UsersFileProvider is the usersfile scheme: users and password hashes from
// a static file. "addauth usersfile alice:secret" authenticates as the id
// "alice", which ACL entries name as usersfile:alice. The file has one
// "user:<hash>" per line (see HashPassword); blank lines and lines starting
// with '#' are ignored; a user name is non-empty, without ':' or spaces.
type UsersFileProvider struct {
	path string

	// mu guards users and decoy, which Reload replaces.
	mu    sync.RWMutex
	users map[string]passwordHash
	decoy passwordHash // verified for unknown users, so timing hides who exists
}

var _ Provider = (*UsersFileProvider)(nil)

// NewUsersFileProvider loads the users file at path.
func NewUsersFileProvider(path string) (*UsersFileProvider, error) {
	p := &UsersFileProvider{path: path}
	if err := p.Reload(); err != nil {
		return nil, err
	}
	return p, nil
}

// Reload re-reads the file; on error the previous users stay in effect.
// Identities already granted to connections are not revoked.
func (p *UsersFileProvider) Reload() error {
	f, err := os.Open(p.path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadUsersFile, err)
	}
	defer f.Close()
	users, err := parseUsersFile(f)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadUsersFile, p.path, err)
	}
	decoy := passwordHash{iterations: minHashIterations, salt: make([]byte, saltLen), key: make([]byte, keyLen)}
	for _, h := range users {
		decoy.iterations = max(decoy.iterations, h.iterations)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users, p.decoy = users, decoy
	return nil
}

// parseUsersFile reads "user:<hash>" lines.
func parseUsersFile(r io.Reader) (map[string]passwordHash, error) {
	users := make(map[string]passwordHash)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || !validUserName(user) {
			return nil, fmt.Errorf("line %d: want user:<hash> with a user name free of ':' and spaces", n)
		}
		if _, dup := users[user]; dup {
			return nil, fmt.Errorf("line %d: user %q appears twice", n, user)
		}
		h, err := parseHash(hash)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		users[user] = h
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return users, nil
}

// validUserName accepts non-empty names without ':', spaces or controls.
func validUserName(u string) bool {
	return u != "" && !strings.ContainsFunc(u, func(r rune) bool {
		return r == ':' || unicode.IsSpace(r) || unicode.IsControl(r)
	})
}

// Scheme implements Provider.
func (*UsersFileProvider) Scheme() string { return SchemeUsersFile }

// Authenticate implements Provider: auth is "user:password" (the password
// may contain ':'); it yields usersfile:user when the password matches.
func (p *UsersFileProvider) Authenticate(_ ConnInfo, auth []byte) ([]jute.ID, error) {
	user, pw, ok := strings.Cut(string(auth), ":")
	p.mu.RLock()
	h, known := p.users[user]
	decoy := p.decoy
	p.mu.RUnlock()
	if !ok || !known {
		decoy.verify(pw)
		return nil, fmt.Errorf("%w: usersfile: unknown user or bad password", ErrAuthFailed)
	}
	if !h.verify(pw) {
		return nil, fmt.Errorf("%w: usersfile: unknown user or bad password", ErrAuthFailed)
	}
	return []jute.ID{{Scheme: SchemeUsersFile, ID: user}}, nil
}

// Matches implements Provider: the user names are equal.
func (*UsersFileProvider) Matches(id, aclExpr string) bool { return id == aclExpr }

// IsValid implements Provider: a well-formed user name (the user need not be
// in the file, which may change).
func (*UsersFileProvider) IsValid(id string) bool { return validUserName(id) }

// IsAuthenticated implements Provider.
func (*UsersFileProvider) IsAuthenticated() bool { return true }
