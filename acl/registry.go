package acl

import (
	"crypto/subtle"
	"fmt"
	"sort"
	"sync"

	"github.com/zkserverd/zkserverd/jute"
)

// Scheme names with a fixed meaning.
const (
	// SchemeWorld is the scheme of the "everyone" id world:anyone.
	SchemeWorld = "world"
	// SchemeAuth is the ACL pseudo-scheme replaced by the caller's
	// authenticated ids; it never names a provider.
	SchemeAuth = "auth"
	// SchemeSuper is the scheme of the id that bypasses every ACL check.
	SchemeSuper = "super"
	// SchemeIP is the scheme of client addresses.
	SchemeIP = "ip"
	// SchemeDigest is the scheme of user:password credentials.
	SchemeDigest = "digest"
	// SchemeX509 is the scheme of TLS client certificates.
	SchemeX509 = "x509"
)

// Options configures a Registry.
type Options struct {
	// SuperDigest is ZooKeeper's
	// zookeeper.DigestAuthenticationProvider.superDigest: a digest id such as
	// Digest("super:secret"). A connection whose digest auth yields exactly
	// this id also gets the id super: and passes every ACL check. Empty
	// disables it.
	SuperDigest string
	// Providers are added after the built-in ones. As with ZooKeeper's
	// authProvider.N, a provider whose scheme is already registered replaces
	// the earlier one (so a custom "digest" overrides the built-in). Nil
	// providers and those with an empty or "auth" scheme are skipped; use
	// Register to get an error instead.
	Providers []Provider
}

// Registry maps schemes to providers and implements ZooKeeper's ACL
// algorithms over them. It is safe for concurrent use.
type Registry struct {
	superDigest string

	// mu guards providers. Lookups take the read lock; Register the write lock.
	mu        sync.RWMutex
	providers map[string]Provider
}

// NewRegistry returns a registry with the providers every ZooKeeper server
// has (ip, digest) plus world (whose only valid id is "anyone"), then
// opts.Providers. x509 is not registered by default, as in ZooKeeper, where
// an x509 ACL is InvalidACL until authProvider.x509 is configured: add
// NewX509Provider to opts.Providers or Register it to enable TLS identities.
func NewRegistry(opts Options) *Registry {
	r := &Registry{superDigest: opts.SuperDigest, providers: make(map[string]Provider)}
	for _, p := range []Provider{WorldProvider{}, IPProvider{}, DigestProvider{}} {
		r.providers[p.Scheme()] = p
	}
	for _, p := range opts.Providers {
		if checkProvider(p) == nil {
			r.providers[p.Scheme()] = p
		}
	}
	return r
}

// checkProvider rejects providers the registry cannot hold.
func checkProvider(p Provider) error {
	if p == nil {
		return fmt.Errorf("%w: nil", ErrInvalidProvider)
	}
	switch s := p.Scheme(); s {
	case "":
		return fmt.Errorf("%w: empty scheme", ErrInvalidProvider)
	case SchemeAuth:
		return fmt.Errorf("%w: scheme %q is reserved", ErrInvalidProvider, s)
	}
	return nil
}

// Register adds a provider. It fails if the provider is nil, its scheme is
// empty or "auth", or a provider with that scheme is already registered.
func (r *Registry) Register(p Provider) error {
	if err := checkProvider(p); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.providers[p.Scheme()]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateScheme, p.Scheme())
	}
	r.providers[p.Scheme()] = p
	return nil
}

// Provider returns the provider of a scheme.
func (r *Registry) Provider(scheme string) (Provider, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.providers[scheme]
	return p, ok
}

// Schemes lists the registered schemes in sorted order.
func (r *Registry) Schemes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.providers))
	for s := range r.providers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Authenticate handles an auth packet: it returns the identities the
// connection gains, without duplicates. A digest id equal to the configured
// super digest is preceded by super:. Any failure (unknown scheme, rejected
// credentials) is an error wrapping jute.AuthFailed: the server replies with
// that code and closes the connection.
func (r *Registry) Authenticate(scheme string, conn ConnInfo, auth []byte) ([]jute.ID, error) {
	p, ok := r.Provider(scheme)
	if !ok {
		return nil, fmt.Errorf("%w %q: %w", ErrUnknownScheme, scheme, jute.AuthFailed)
	}
	ids, err := p.Authenticate(conn, auth)
	if err != nil {
		return nil, fmt.Errorf("acl: scheme %q: %w: %w", scheme, err, jute.AuthFailed)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("acl: scheme %q: %w: no identity: %w", scheme, ErrAuthFailed, jute.AuthFailed)
	}
	if r.isSuperDigest(scheme, ids) {
		ids = append([]jute.ID{{Scheme: SchemeSuper, ID: ""}}, ids...)
	}
	return dedupIDs(ids), nil
}

// isSuperDigest reports whether a digest auth produced the super digest.
func (r *Registry) isSuperDigest(scheme string, ids []jute.ID) bool {
	if r.superDigest == "" || scheme != SchemeDigest {
		return false
	}
	for _, id := range ids {
		if id.Scheme == SchemeDigest && subtle.ConstantTimeCompare([]byte(id.ID), []byte(r.superDigest)) == 1 {
			return true
		}
	}
	return false
}

// dedupIDs removes repeated identities, keeping the first of each.
func dedupIDs(ids []jute.ID) []jute.ID {
	out := make([]jute.ID, 0, len(ids))
	for _, id := range ids {
		if !containsID(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// containsID reports whether id is in ids.
func containsID(ids []jute.ID, id jute.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// UserName is the user whoAmI reports for an identity: the provider's
// UserName if it has one, else the id; "" when no provider has the scheme
// (as for super), like ZooKeeper's AuthUtil.getUser.
func (r *Registry) UserName(id jute.ID) string {
	p, ok := r.Provider(id.Scheme)
	if !ok {
		return ""
	}
	if n, ok := p.(UserNamer); ok {
		return n.UserName(id.ID)
	}
	return id.ID
}

// ClientInfo is the whoAmI answer for a connection's identities.
func (r *Registry) ClientInfo(ids []jute.ID) []jute.ClientInfo {
	out := make([]jute.ClientInfo, 0, len(ids))
	for _, id := range ids {
		out = append(out, jute.ClientInfo{AuthScheme: id.Scheme, User: r.UserName(id)})
	}
	return out
}
