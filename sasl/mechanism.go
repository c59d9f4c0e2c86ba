package sasl

import (
	"errors"
	"strings"
)

// ErrFailed means a SASL exchange failed: bad credentials, a malformed
// token, or a token after completion. The server answers it as ZooKeeper
// answers a SaslException.
var ErrFailed = errors.New("sasl: authentication failed")

// Mechanism is the server side of one SASL exchange on one connection. It is
// driven by one goroutine (the connection's reader) and is not safe for
// concurrent use.
type Mechanism interface {
	// Evaluate takes the client's token (empty for the first one of a
	// mechanism without an initial response) and returns the token to send
	// back (nil for none). An error wraps ErrFailed.
	Evaluate(token []byte) ([]byte, error)
	// Complete reports whether the exchange has succeeded.
	Complete() bool
	// AuthenticationID is the authenticated user once Complete.
	AuthenticationID() string
}

// Factory starts a Mechanism for a new exchange. A GSSAPI mechanism would be
// another Factory chosen by NewFactory.
type Factory func() Mechanism

// Options are the server's SASL settings that shape a Factory.
type Options struct {
	// Section is the JAAS section of the server (zookeeper.sasl.serverconfig,
	// default "Server").
	Section string
	// SuperPassword replaces the JAAS password of the user "super"
	// (zookeeper.SASLAuthenticationProvider.superPassword); "" keeps it.
	SuperPassword string
}

// NewFactory returns the mechanism a JAAS configuration gives the server:
// DIGEST-MD5 over the section's user_NAME options, or nil (with the reason)
// when the section is missing or holds no users (a Kerberos-only section:
// GSSAPI is not implemented).
func NewFactory(j JAAS, opts Options) (Factory, string) {
	if _, ok := j[opts.Section]; !ok {
		return nil, "no JAAS section " + opts.Section
	}
	users := j.Users(opts.Section)
	if len(users) == 0 {
		return nil, "JAAS section " + opts.Section + " has no user_ entries (GSSAPI is not supported)"
	}
	if opts.SuperPassword != "" {
		users["super"] = opts.SuperPassword
	}
	return func() Mechanism { return NewDigestMD5Server(users) }, ""
}

// NameRules turn an authenticated principal into the id of the sasl scheme,
// as ZooKeeper's SaslServerCallbackHandler does with
// zookeeper.kerberos.removeHostFromPrincipal and removeRealmFromPrincipal.
// Kerberos auth_to_local rules are not applied: the short name is the part
// before any '/' or '@'.
type NameRules struct {
	RemoveHost  bool
	RemoveRealm bool
}

// AuthorizationID is the canonical name of principal (user[/host][@realm]).
func (r NameRules) AuthorizationID(principal string) string {
	rest, realm, hasRealm := strings.Cut(principal, "@")
	user, host, hasHost := strings.Cut(rest, "/")
	if !hasRealm {
		// ZooKeeper's KerberosName takes a name without a realm whole.
		return principal
	}
	id := user
	if hasHost && !r.RemoveHost {
		id += "/" + host
	}
	if !r.RemoveRealm {
		id += "@" + realm
	}
	return id
}
