package acl

import (
	"fmt"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// SchemeSASL is the scheme of identities from a SASL login (sasl:NAME).
const SchemeSASL = "sasl"

// SASLProvider is ZooKeeper's SASLAuthenticationProvider: it only matches
// ACL entries; identities come from the SASL login on the connection (the
// sasl request), never from an auth packet.
type SASLProvider struct {
	// AnyUser is zookeeper.letAnySaslUserDoX: an ACL id equal to it is
	// matched by every sasl identity ("" disables it).
	AnyUser string
}

var _ Provider = SASLProvider{}

// Scheme implements Provider.
func (SASLProvider) Scheme() string { return SchemeSASL }

// Authenticate implements Provider: an auth packet of scheme sasl always
// fails, as in ZooKeeper.
func (SASLProvider) Authenticate(ConnInfo, []byte) ([]jute.ID, error) {
	return nil, fmt.Errorf("%w: scheme sasl is authenticated by the sasl request, not an auth packet", ErrAuthFailed)
}

// Matches implements Provider: the id itself, the id "super", or any id
// when the entry is the configured AnyUser.
func (p SASLProvider) Matches(id, aclExpr string) bool {
	return id == "super" || id == aclExpr || (p.AnyUser != "" && aclExpr == p.AnyUser)
}

// IsValid implements Provider: a principal name user[/host][@realm], where
// a name with '@' must have that form (ZooKeeper's KerberosName).
func (SASLProvider) IsValid(id string) bool {
	if !strings.Contains(id, "@") {
		return true
	}
	rest, realm, _ := strings.Cut(id, "@")
	user, host, hasHost := strings.Cut(rest, "/")
	return !strings.ContainsAny(realm, "/@") && !strings.Contains(host, "/") &&
		!strings.Contains(user, "/") && (!hasHost || !strings.Contains(host, "@"))
}

// IsAuthenticated implements Provider.
func (SASLProvider) IsAuthenticated() bool { return true }
