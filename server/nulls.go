package server

import (
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// ZooKeeper reads a null ustring (length -1) as a Java null, and its
// answer then depends on where the null went: most code paths throw a
// NullPointerException, which the server reports as MarshallingError,
// while a few check for null first. zkserverd decodes a null string as ""
// and uses the decoder's note of the first null (jute.Decoder
// FirstNullString) to give ZooKeeper 3.8's answer instead of the answer
// for "". Cases not listed here behave as for "" (docs/compatibility.md).

// nullStringReply decides the answer for a request of op whose idx-th
// ustring (decoding order) was the first null one. ok is false when the
// request goes on as if the string were "".
func nullStringReply(op jute.OpCode, req jute.Record, idx int) (r refusal, ok bool) {
	marshalling := refusal{code: jute.MarshallingError}
	switch op {
	case jute.OpMulti, jute.OpMultiRead:
		return multiNullReply(req.(*jute.MultiRequest), idx)
	case jute.OpSetWatches, jute.OpSetWatches2:
		return marshalling, true
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpSetACL:
		if idx == 0 {
			// A null path: create looks for its last slash (an exception);
			// setACL validates the path first (BadArguments, as for "").
			return marshalling, op != jute.OpSetACL
		}
		return marshalling, nullACLIDFails(aclsOf(req), idx-1)
	case jute.OpDelete, jute.OpExists, jute.OpGetData, jute.OpGetChildren, jute.OpGetChildren2,
		jute.OpGetACL, jute.OpGetAllChildrenNumber, jute.OpCheckWatches:
		return marshalling, idx == 0
	}
	// setData and check validate the path first (BadArguments, as for
	// ""); sync echoes it (completeSync); getEphemerals, addWatch and
	// removeWatches treat it like any prefix or path; reconfig's strings
	// may be null.
	return refusal{}, false
}

// multiNullReply decides for a multi or multiRead whose idx-th ustring was
// the first null one. ZooKeeper reads every op's record before any op
// runs, then looks up every op's path: a null path fails the whole request
// with the end marker in the reply, after the multi took its zxid but
// before it made a transaction (burned). A null in a create's ACL list is
// then judged as in a create of its own, inside the multi's transaction.
func multiNullReply(m *jute.MultiRequest, idx int) (refusal, bool) {
	for _, o := range m.Ops {
		acls := aclsOf(o.Request)
		if n := 1 + 2*len(acls); idx >= n {
			idx -= n
			continue
		}
		if idx == 0 {
			return refusal{code: jute.MarshallingError, body: &jute.MultiResponse{}, burned: true}, true
		}
		return refusal{code: jute.MarshallingError}, nullACLIDFails(acls, idx-1)
	}
	return refusal{}, false
}

// rejectNull queues ZooKeeper's answer to a request whose idx-th ustring
// was null, and reports whether it did (false: the request goes on).
func (c *conn) rejectNull(h jute.RequestHeader, req jute.Record, idx int, now time.Time) bool {
	r, ok := nullStringReply(h.Type, req, idx)
	if !ok {
		return false
	}
	c.log.Info("null string in request", "op", h.Type, "err", r.code)
	c.refuse(h, req, r, now)
	return true
}

// aclsOf returns the ACL list of a create or setACL request.
func aclsOf(req jute.Record) []jute.ACL {
	switch r := req.(type) {
	case *jute.CreateRequest:
		return r.ACL
	case *jute.CreateTTLRequest:
		return r.ACL
	case *jute.SetACLRequest:
		return r.ACL
	}
	return nil
}

// nullACLIDFails reports whether ZooKeeper's ACL check fails with an
// exception on the null at string idx of an ACL list (two strings per
// entry: scheme, id). A null scheme is InvalidACL (checked for), as is a
// null id of a scheme without a provider or of the auth scheme, which
// ignores it; the world, digest and ip checks dereference the id.
func nullACLIDFails(acls []jute.ACL, idx int) bool {
	entry := idx / 2
	if idx%2 == 0 || entry >= len(acls) {
		return false
	}
	switch acls[entry].ID.Scheme {
	case "world", "digest", "ip":
		return true
	}
	return false
}

// nullString is a null ustring as a record (a sync reply echoing a null
// path).
type nullString struct{}

// Encode writes a null string; Decode reads one.
func (nullString) Encode(e *jute.Encoder) { e.Int(-1) }
func (nullString) Decode(d *jute.Decoder) { d.Int() }
