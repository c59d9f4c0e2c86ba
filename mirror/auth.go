package mirror

import (
	"github.com/zkserverd/zkserverd/acl"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
)

// applyAuth is the tree's Authorizer. ZooKeeper has already checked the
// permissions of every transaction and stored its ACLs fixed up (auth
// expanded, duplicates removed), so the mirror's own applies, recognised
// by the identity slice they carry, pass every check and store ACL lists
// as they are. Everyone else (the server's reads) gets the configured
// Authorizer, or no checks when there is none, as datatree does.
type applyAuth struct {
	next    datatree.Authorizer // nil: every check passes
	builtin datatree.Authorizer // validates lists for others when next is nil
	// token is the IDs slice of the mirror's applies; only its address
	// matters, so no client identity can pass for it.
	token []jute.ID
}

func newApplyAuth(next datatree.Authorizer) *applyAuth {
	return &applyAuth{
		next:    next,
		builtin: acl.NewRegistry(acl.Options{}),
		token:   []jute.ID{{Scheme: "zkserverd-mirror", ID: "apply"}},
	}
}

// isApply reports whether ids is the mirror's own token.
func (a *applyAuth) isApply(ids []jute.ID) bool {
	return len(ids) == 1 && &ids[0] == &a.token[0]
}

// Allowed implements datatree.Authorizer.
func (a *applyAuth) Allowed(list []jute.ACL, ids []jute.ID, perm int32) bool {
	if a.isApply(ids) || a.next == nil {
		return true
	}
	return a.next.Allowed(list, ids, perm)
}

// FixupACL implements datatree.Authorizer.
func (a *applyAuth) FixupACL(list []jute.ACL, ids []jute.ID) ([]jute.ACL, jute.Code) {
	if a.isApply(ids) {
		if len(list) == 0 {
			return nil, jute.InvalidACL
		}
		return list, jute.OK
	}
	if a.next != nil {
		return a.next.FixupACL(list, ids)
	}
	return a.builtin.FixupACL(list, ids)
}
