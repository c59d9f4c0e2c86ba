package acl

import "github.com/zkserverd/zkserverd/jute"

// Allowed reports whether a connection with identities ids may perform an
// operation needing any of the permission bits perm on a node with the given
// ACL (ZooKeeperServer.checkACL):
//
//  1. an empty ACL allows everything;
//  2. an identity of scheme super allows everything;
//  3. otherwise some entry must share a bit with perm and either be
//     world:anyone or be matched, by its scheme's provider, by one of the
//     identities of the same scheme.
//
// Entries whose scheme has no provider never match.
func (r *Registry) Allowed(acl []jute.ACL, ids []jute.ID, perm int32) bool {
	if len(acl) == 0 {
		return true
	}
	for _, id := range ids {
		if id.Scheme == SchemeSuper {
			return true
		}
	}
	for _, a := range acl {
		if a.Perms&perm != 0 && r.entryMatches(a.ID, ids) {
			return true
		}
	}
	return false
}

// entryMatches reports whether an ACL entry's id is satisfied by ids.
func (r *Registry) entryMatches(entry jute.ID, ids []jute.ID) bool {
	if isWorldAnyone(entry) {
		return true
	}
	p, ok := r.Provider(entry.Scheme)
	if !ok {
		return false
	}
	for _, id := range ids {
		if id.Scheme == entry.Scheme && p.Matches(id.ID, entry.ID) {
			return true
		}
	}
	return false
}

// isWorldAnyone reports whether id is world:anyone.
func isWorldAnyone(id jute.ID) bool { return id.Scheme == SchemeWorld && id.ID == "anyone" }

// FixupACL validates an ACL being set by create or setACL, for a caller with
// identities ids, and returns the ACL to store (PrepRequestProcessor.fixupACL):
//
//   - exact duplicates are removed, keeping the first of each, in order;
//   - an empty list is invalid;
//   - world:anyone is kept;
//   - an auth entry (its id is ignored) is replaced by one entry with its
//     perms for each of ids whose provider IsAuthenticated, in ids order;
//     none is invalid;
//   - any other entry needs a registered provider whose IsValid accepts the id.
//
// Perms are not checked. The result does not alias acl; the code is
// jute.InvalidACL on failure and jute.OK otherwise.
func (r *Registry) FixupACL(acl []jute.ACL, ids []jute.ID) ([]jute.ACL, jute.Code) {
	uniq := dedupACL(acl)
	if len(uniq) == 0 {
		return nil, jute.InvalidACL
	}
	out := make([]jute.ACL, 0, len(uniq))
	for _, a := range uniq {
		switch {
		case isWorldAnyone(a.ID):
			out = append(out, a)
		case a.ID.Scheme == SchemeAuth:
			expanded := r.expandAuth(a.Perms, ids)
			if len(expanded) == 0 {
				return nil, jute.InvalidACL
			}
			out = append(out, expanded...)
		default:
			p, ok := r.Provider(a.ID.Scheme)
			if !ok || !p.IsValid(a.ID.ID) {
				return nil, jute.InvalidACL
			}
			out = append(out, a)
		}
	}
	return out, jute.OK
}

// expandAuth returns one entry with perms per authenticated identity.
func (r *Registry) expandAuth(perms int32, ids []jute.ID) []jute.ACL {
	var out []jute.ACL
	for _, id := range ids {
		if p, ok := r.Provider(id.Scheme); ok && p.IsAuthenticated() {
			out = append(out, jute.ACL{Perms: perms, ID: id})
		}
	}
	return out
}

// dedupACL removes exact duplicates, keeping the first of each in order.
func dedupACL(acl []jute.ACL) []jute.ACL {
	out := make([]jute.ACL, 0, len(acl))
	for _, a := range acl {
		dup := false
		for _, b := range out {
			if a == b {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, a)
		}
	}
	return out
}

// MaskForReader returns the ACL that getACL shows to a caller with
// identities ids. A caller with ADMIN on the node sees it unchanged (the same
// slice); any other caller gets a copy in which every digest id has its
// password hash replaced by "x" ("alice:aYXl...=" becomes "alice:x"). The
// caller must already have checked READ|ADMIN.
func (r *Registry) MaskForReader(acl []jute.ACL, ids []jute.ID) []jute.ACL {
	if r.Allowed(acl, ids, jute.PermAdmin) {
		return acl
	}
	out := make([]jute.ACL, len(acl))
	for i, a := range acl {
		if a.ID.Scheme == SchemeDigest {
			a.ID.ID = javaReplaceColonTail(a.ID.ID)
		}
		out[i] = a
	}
	return out
}
