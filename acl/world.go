package acl

import (
	"fmt"

	"github.com/zkserverd/zkserverd/jute"
)

// WorldProvider is the world scheme. Its only id is "anyone", which every
// connection satisfies; nobody can authenticate as world.
type WorldProvider struct{}

var _ Provider = WorldProvider{}

// Scheme implements Provider.
func (WorldProvider) Scheme() string { return SchemeWorld }

// Authenticate implements Provider: it always fails, as ZooKeeper has no
// world provider to accept an auth packet.
func (WorldProvider) Authenticate(ConnInfo, []byte) ([]jute.ID, error) {
	return nil, fmt.Errorf("%w: scheme world cannot be authenticated", ErrAuthFailed)
}

// Matches implements Provider: world:anyone matches everyone.
func (WorldProvider) Matches(_, aclExpr string) bool { return aclExpr == "anyone" }

// IsValid implements Provider: only "anyone".
func (WorldProvider) IsValid(id string) bool { return id == "anyone" }

// IsAuthenticated implements Provider.
func (WorldProvider) IsAuthenticated() bool { return false }
