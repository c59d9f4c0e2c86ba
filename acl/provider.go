package acl

import (
	"crypto/x509"
	"errors"
	"net"

	"github.com/zkserverd/zkserverd/jute"
)

// Sentinel errors of the package. Errors returned by Registry.Authenticate
// also wrap jute.AuthFailed, so errors.As(err, &code) yields the wire code.
var (
	// ErrUnknownScheme means no provider is registered for an auth scheme.
	ErrUnknownScheme = errors.New("acl: unknown auth scheme")
	// ErrAuthFailed means a provider rejected the credentials.
	ErrAuthFailed = errors.New("acl: authentication failed")
	// ErrDuplicateScheme means Register was given a scheme already taken.
	ErrDuplicateScheme = errors.New("acl: scheme already registered")
	// ErrInvalidProvider means a provider is nil or has an unusable scheme.
	ErrInvalidProvider = errors.New("acl: invalid provider")
	// ErrUnknownProvider means NewProviderByName does not know the name.
	ErrUnknownProvider = errors.New("acl: unknown provider name")
	// ErrUnsupportedProvider means NewProviderByName knows the name (a
	// ZooKeeper provider class) but zkserverd does not implement it.
	ErrUnsupportedProvider = errors.New("acl: provider not supported")
	// ErrBadParams means a provider's parameters are missing or malformed.
	ErrBadParams = errors.New("acl: bad provider parameters")
	// ErrBadPerms means a permission string has a letter other than cdrwa.
	ErrBadPerms = errors.New("acl: bad permission letters")
)

// Provider is the Go equivalent of ZooKeeper's AuthenticationProvider: one
// authentication scheme. Implementations must be safe for concurrent use.
type Provider interface {
	// Scheme is the scheme name, as used in auth packets and ACL entries.
	Scheme() string
	// Authenticate turns an auth packet's bytes (and the connection's remote
	// address and TLS state) into identities, or returns an error; the server
	// then replies AuthFailed and closes the connection.
	Authenticate(conn ConnInfo, auth []byte) ([]jute.ID, error)
	// Matches reports whether an authenticated id of this scheme satisfies
	// an ACL entry's id (aclExpr) of this scheme.
	Matches(id, aclExpr string) bool
	// IsValid reports whether id may appear in an ACL being set.
	IsValid(id string) bool
	// IsAuthenticated reports whether ids of this scheme count for the "auth"
	// ACL pseudo-scheme (digest, x509, sasl: yes; ip: no).
	IsAuthenticated() bool
}

// UserNamer is an optional interface of a Provider: the user name that
// whoAmI reports for an id of its scheme. Providers without it report the id
// itself (ZooKeeper's AuthenticationProvider.getUserName default).
type UserNamer interface {
	UserName(id string) string
}

// ConnInfo is what a provider may know about the connection it authenticates.
type ConnInfo struct {
	// RemoteAddr is the client's address (nil if unknown).
	RemoteAddr net.Addr
	// PeerCertificates is the client's certificate chain, leaf first, as
	// verified by the TLS layer (tls.ConnectionState.PeerCertificates); empty
	// on a plaintext connection.
	PeerCertificates []*x509.Certificate
}
