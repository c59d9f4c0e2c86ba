package datatree

import (
	"slices"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// Txn is one decided write as carried in the replicated log.
type Txn struct {
	// Type is one of OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL,
	// OpDelete, OpSetData, OpSetACL, OpCheck (top-level check: validate
	// only), OpMulti, OpCreateSession (no tree change), OpCloseSession
	// (delete the session's ephemerals), OpDeleteContainer (reaper delete).
	Type      jute.OpCode
	SessionID int64
	// Time is ms since the epoch, set by the proposer; it becomes
	// ctime/mtime.
	Time int64
	// Request is *jute.CreateRequest (create, create2, createContainer),
	// *jute.CreateTTLRequest, *jute.DeleteRequest, *jute.SetDataRequest,
	// *jute.SetACLRequest, *jute.CheckVersionRequest, *jute.MultiRequest or
	// *jute.PathRequest (deleteContainer); nil for session txns. The tree
	// keeps the data slices and path strings of an applied request, so they
	// must not be modified afterwards.
	Request jute.Record
	// IDs are the caller's auth identities at submit time, for ACL checks
	// and `auth` expansion.
	IDs []jute.ID
}

// Event is one watch trigger produced by a write.
type Event struct {
	Type jute.EventType
	Path string
}

// Result is the outcome of applying one Txn.
type Result struct {
	// Err is the reply header's err. It is OK for a multi even when an op
	// failed; the per-op codes are in Response.
	Err jute.Code
	// Response is the success body: *jute.CreateResponse (OpCreate),
	// *jute.Create2Response (create2/container/TTL), *jute.StatResponse
	// (setData, setACL), *jute.MultiResponse (multi, always), nil otherwise.
	Response jute.Record
	// Events are the watch triggers in the order ZooKeeper fires them;
	// empty when nothing changed.
	Events []Event
	// QuotaWarnings lists the quota limits the write went over (see
	// quota.go), including a hard limit that made it fail with
	// QuotaExceeded. ZooKeeper logs these; nothing else sees them.
	QuotaWarnings []QuotaWarning

	evBuf [2]Event // backing store for the common one- and two-event cases
}

// applyCtx is the state of one Apply call.
type applyCtx struct {
	txn      *Txn
	zxid     int64
	events   []Event
	undo     []undoRec // recorded only inside a multi
	multi    bool
	digest   uint64 // Tree.digest before a multi, restored by its rollback
	warnings []QuotaWarning
}

func (c *applyCtx) emit(typ jute.EventType, path string) {
	c.events = append(c.events, Event{Type: typ, Path: path})
}

// Apply applies txn with zxid and returns the result. Every txn consumes its
// zxid even when it fails; ZooKeeper errors are values in Result.Err, never
// panics. Apply is deterministic: it reads no clock and no randomness.
//
// If hook != nil it is called with the result while the tree's write lock
// is still held, so that watch delivery and waiter wake-ups happen before any
// reader can see the new state. The hook must not call into the Tree.
func (t *Tree) Apply(txn *Txn, zxid int64, hook func(*Txn, *Result)) *Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastZxid = max(t.lastZxid, zxid)
	res := &Result{}
	ctx := &applyCtx{txn: txn, zxid: zxid, events: res.evBuf[:0]}
	t.applyLocked(ctx, res)
	t.acls.sweep()
	if len(ctx.events) > 0 {
		res.Events = ctx.events
	}
	res.QuotaWarnings = ctx.warnings
	t.recordQuotaWarnings(ctx.warnings)
	if hook != nil {
		hook(txn, res)
	}
	return res
}

// applyLocked dispatches on the txn type.
func (t *Tree) applyLocked(ctx *applyCtx, res *Result) {
	txn := ctx.txn
	if txn == nil {
		res.Err = jute.MarshallingError
		return
	}
	switch txn.Type {
	case jute.OpCreateSession:
		return
	case jute.OpCloseSession:
		t.closeSession(ctx)
		return
	case jute.OpMulti:
		t.applyMulti(ctx, res)
		return
	case jute.OpReconfig:
		// Dynamic reconfiguration is not implemented by the tree; the
		// server reports it as disabled, which still consumes a zxid.
		res.Err = jute.ReconfigDisabled
		return
	}
	if !requestMatches(txn.Type, txn.Request) {
		res.Err = jute.MarshallingError
		return
	}
	res.Response, res.Err = t.applyOp(ctx, txn.Type, txn.Request)
}

// requestMatches reports whether req is the record type that op carries.
func requestMatches(op jute.OpCode, req jute.Record) bool {
	var ok bool
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer:
		_, ok = req.(*jute.CreateRequest)
	case jute.OpCreateTTL:
		_, ok = req.(*jute.CreateTTLRequest)
	case jute.OpDelete:
		_, ok = req.(*jute.DeleteRequest)
	case jute.OpSetData:
		_, ok = req.(*jute.SetDataRequest)
	case jute.OpSetACL:
		_, ok = req.(*jute.SetACLRequest)
	case jute.OpCheck:
		_, ok = req.(*jute.CheckVersionRequest)
	case jute.OpDeleteContainer:
		_, ok = req.(*jute.PathRequest)
	}
	return ok
}

// applyOp runs one top-level write whose request type has been checked and
// returns its reply body and code.
func (t *Tree) applyOp(ctx *applyCtx, op jute.OpCode, req jute.Record) (jute.Record, jute.Code) {
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		n, path, code := t.create(ctx, op, createArgsOf(req))
		if code != jute.OK {
			return nil, code
		}
		if op == jute.OpCreate {
			return &jute.CreateResponse{Path: path}, jute.OK
		}
		r := &jute.Create2Response{Path: path}
		n.stat(&r.Stat)
		return r, jute.OK
	case jute.OpDelete:
		r := req.(*jute.DeleteRequest)
		return nil, t.delete(ctx, r.Path, r.Version)
	case jute.OpDeleteContainer:
		return nil, t.deleteContainer(ctx, req.(*jute.PathRequest).Path)
	case jute.OpSetData:
		n, code := t.setData(ctx, req.(*jute.SetDataRequest))
		if code != jute.OK {
			return nil, code
		}
		r := &jute.StatResponse{}
		n.stat(&r.Stat)
		return r, jute.OK
	case jute.OpSetACL:
		n, code := t.setACL(ctx, req.(*jute.SetACLRequest))
		if code != jute.OK {
			return nil, code
		}
		r := &jute.StatResponse{}
		n.stat(&r.Stat)
		return r, jute.OK
	case jute.OpCheck:
		r := req.(*jute.CheckVersionRequest)
		return nil, t.check(ctx, r.Path, r.Version)
	}
	return nil, jute.Unimplemented
}

// createArgs is the common view of CreateRequest and CreateTTLRequest.
type createArgs struct {
	path  string
	data  []byte
	acl   []jute.ACL
	flags jute.CreateMode
	ttl   int64
}

func createArgsOf(req jute.Record) createArgs {
	switch r := req.(type) {
	case *jute.CreateRequest:
		return createArgs{path: r.Path, data: r.Data, acl: r.ACL, flags: r.Flags, ttl: -1}
	case *jute.CreateTTLRequest:
		return createArgs{path: r.Path, data: r.Data, acl: r.ACL, flags: r.Flags, ttl: r.TTL}
	}
	return createArgs{}
}

// allowed checks perm on n's ACL for the txn's ids.
func (t *Tree) allowed(n *node, ids []jute.ID, perm int32) bool {
	return !t.checksPermissions() || t.cfg.Authorizer.Allowed(t.acls.get(n.acl()), ids, perm)
}

// checksPermissions reports whether ACLs are enforced: an Authorizer is
// configured and SkipACL is off.
func (t *Tree) checksPermissions() bool { return t.cfg.Authorizer != nil && !t.cfg.SkipACL }

// fixupACL validates an ACL list with the Authorizer, or with the built-in
// schemes of package acl when none is configured.
func (t *Tree) fixupACL(list []jute.ACL, ids []jute.ID) ([]jute.ACL, jute.Code) {
	a := t.cfg.Authorizer
	if a == nil {
		a = t.builtin
	}
	out, code := a.FixupACL(list, ids)
	if code == jute.OK && len(out) == 0 {
		code = jute.InvalidACL
	}
	return out, code
}

// checkVersion implements ZooKeeper's expected-version rule.
func checkVersion(current, expected int32) jute.Code {
	if expected != -1 && expected != current {
		return jute.BadVersion
	}
	return jute.OK
}

// validateCreateMode runs the first checks of a create, in ZooKeeper's
// order: flags, extended types, TTL range.
func (t *Tree) validateCreateMode(op jute.OpCode, a *createArgs) jute.Code {
	mode := a.flags
	if !mode.Valid() {
		return jute.BadArguments
	}
	if mode.IsTTL() && !t.cfg.ExtendedTypesEnabled {
		return jute.Unimplemented
	}
	if mode.IsTTL() {
		if a.ttl <= 0 || a.ttl > jute.MaxTTL {
			return jute.BadArguments
		}
	} else if a.ttl >= 0 || op == jute.OpCreateTTL {
		// createTTL with a non-TTL mode crashes ZooKeeper 3.8.0 at apply
		// time; a compatible server rejects it here.
		return jute.BadArguments
	}
	return jute.OK
}

// newNodeKind decides the kind and stored ephemeralOwner of a new node: the
// opcode wins over the flags (19 is always a container, 21 a TTL node, and
// flag 4 on 1/15 is a plain persistent node).
func newNodeKind(op jute.OpCode, a *createArgs, session int64) (nodeKind, int64) {
	switch {
	case op == jute.OpCreateContainer:
		return kindContainer, jute.ContainerOwner
	case op == jute.OpCreateTTL:
		return kindTTL, jute.TTLOwnerMask | a.ttl
	case a.flags.IsEphemeral() && session != 0:
		return kindEphemeral, session
	}
	return kindPersistent, 0
}

// createCheck validates a create of any kind in ZooKeeper's order
// (TestCreatePrecedence pins it) without changing the tree, and returns where the new
// node goes and its interned-to-be ACL list.
func (t *Tree) createCheck(ctx *applyCtx, op jute.OpCode, a *createArgs) (loc, []jute.ACL, jute.Code) {
	if code := t.validateCreateMode(op, a); code != jute.OK {
		return loc{}, nil, code
	}
	parentPath, _, ok := splitParent(a.path)
	if !ok || containsNUL(a.path) {
		return loc{}, nil, jute.BadArguments
	}
	acl, code := t.fixupACL(a.acl, ctx.txn.IDs)
	if code != jute.OK {
		return loc{}, nil, code
	}
	parent := t.lookup(parentPath)
	if parent == nil {
		return loc{}, nil, jute.NoNode
	}
	if !t.allowed(parent, ctx.txn.IDs, jute.PermCreate) {
		return loc{}, nil, jute.NoAuth
	}
	path := a.path
	if a.flags.IsSequential() {
		path = sequentialPath(path, parent.cversion)
	}
	if ValidatePath(path) != jute.OK {
		return loc{}, nil, jute.BadArguments
	}
	l := loc{parent: parent, parentPath: parentPath, name: path[len(parentPath)+1:], path: path}
	if l.name == "" || t.child(parent, l.name) != nil { // "" is "/" itself
		return loc{}, nil, jute.NodeExists
	}
	if parent.kind() == kindEphemeral {
		return loc{}, nil, jute.NoChildrenForEphemerals
	}
	if code := t.checkQuota(ctx, path, 1, int64(len(a.data))); code != jute.OK {
		return loc{}, nil, code
	}
	return l, acl, jute.OK
}

// create validates and applies a create of any kind and returns the new
// node and its path.
func (t *Tree) create(ctx *applyCtx, op jute.OpCode, a createArgs) (*node, string, jute.Code) {
	l, acl, code := t.createCheck(ctx, op, &a)
	if code != jute.OK {
		return nil, "", code
	}
	parent, parentPath, path := l.parent, l.parentPath, l.path
	kind, owner := newNodeKind(op, &a, ctx.txn.SessionID)
	n := newNode(kind, t.acls.intern(acl))
	n.setName(strings.Clone(l.name)) // not a slice of the request's path
	n.setData(a.data)
	n.owner = owner
	n.czxid, n.mzxid, n.pzxid = ctx.zxid, ctx.zxid, ctx.zxid
	n.ctime, n.mtime = ctx.txn.Time, ctx.txn.Time
	t.noteCreate(n)
	if ctx.multi {
		ctx.undo = append(ctx.undo, undoRec{op: undoCreate, n: n, loc: l,
			cversion: parent.cversion, pzxid: parent.pzxid})
	}
	pp := parentHash(parentPath)
	t.digest -= kidsHash(pp, parent, parent.kids.len())
	t.touch(parent)
	t.link(l, n)
	parent.cversion++
	parent.pzxid = ctx.zxid
	t.digest += kidsHash(pp, parent, parent.kids.len()) + t.nodeHash(pathHash(path), n)
	t.quotaCreated(ctx, path, n, len(a.data))
	ctx.emit(jute.EventNodeCreated, path)
	ctx.emit(jute.EventNodeChildrenChanged, eventParent(parentPath))
	return n, path, jute.OK
}

// sequentialPath appends the sequence suffix for counter v to path.
func sequentialPath(path string, v int32) string {
	var b strings.Builder
	b.Grow(len(path) + 11)
	b.WriteString(path)
	var buf [12]byte
	b.Write(appendSequence(buf[:0], v))
	return b.String()
}

func containsNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// delete validates and applies a client delete.
func (t *Tree) delete(ctx *applyCtx, path string, version int32) jute.Code {
	if !strings.Contains(path, "/") || containsNUL(path) || isSystemPath(path) {
		return jute.BadArguments
	}
	l := t.locate(path)
	if l.parent == nil {
		return jute.NoNode
	}
	if !t.allowed(l.parent, ctx.txn.IDs, jute.PermDelete) {
		return jute.NoAuth
	}
	n := t.child(l.parent, l.name)
	if n == nil {
		return jute.NoNode
	}
	if code := checkVersion(n.version, version); code != jute.OK {
		return code
	}
	if n.kids.len() > 0 {
		return jute.NotEmpty
	}
	t.deleteNode(ctx, l, n)
	return jute.OK
}

// deleteContainer applies the reaper's delete of a container or TTL node.
// Like ZooKeeper it refuses a node with children (NotEmpty) and a normal
// ephemeral (BadVersion); it also re-checks the reaping criteria at the
// transaction's time (reapCheck), so a node changed since the reaper looked
// stays.
func (t *Tree) deleteContainer(ctx *applyCtx, path string) jute.Code {
	if !strings.Contains(path, "/") || containsNUL(path) || isSystemPath(path) {
		return jute.BadArguments
	}
	l := t.locate(path)
	var n *node
	if l.parent != nil {
		n = t.child(l.parent, l.name)
	}
	if n == nil {
		return jute.NoNode
	}
	if n.kids.len() > 0 {
		return jute.NotEmpty
	}
	if code := reapCheck(n, ctx.txn.Time); code != jute.OK {
		return code
	}
	t.deleteNode(ctx, l, n)
	return jute.OK
}

// deleteNode removes the childless node n at l and fires its events.
func (t *Tree) deleteNode(ctx *applyCtx, l loc, n *node) {
	if ctx.multi {
		ctx.undo = append(ctx.undo, undoRec{op: undoDelete, n: n, loc: l, pzxid: l.parent.pzxid})
	}
	pp := parentHash(l.parentPath)
	t.digest -= kidsHash(pp, l.parent, l.parent.kids.len()) + t.nodeHash(pathHash(l.path), n)
	t.touch(l.parent)
	t.unlink(l, n)
	t.acls.release(n.acl())
	l.parent.pzxid = ctx.zxid
	t.digest += kidsHash(pp, l.parent, l.parent.kids.len())
	t.updateQuota(ctx, l.path, -1, -int64(len(n.data())))
	ctx.emit(jute.EventNodeDeleted, l.path)
	ctx.emit(jute.EventNodeChildrenChanged, eventParent(l.parentPath))
}

// setDataCheck validates a setData without changing the tree and returns
// the node it changes.
func (t *Tree) setDataCheck(ctx *applyCtx, r *jute.SetDataRequest) (*node, jute.Code) {
	if ValidatePath(r.Path) != jute.OK {
		return nil, jute.BadArguments
	}
	n := t.lookup(r.Path)
	if n == nil {
		return nil, jute.NoNode
	}
	if !t.allowed(n, ctx.txn.IDs, jute.PermWrite) {
		return nil, jute.NoAuth
	}
	if code := t.checkQuota(ctx, r.Path, 0, int64(len(r.Data)-len(n.data()))); code != jute.OK {
		return nil, code
	}
	return n, checkVersion(n.version, r.Version)
}

// setData validates and applies a setData.
func (t *Tree) setData(ctx *applyCtx, r *jute.SetDataRequest) (*node, jute.Code) {
	n, code := t.setDataCheck(ctx, r)
	if code != jute.OK {
		return nil, code
	}
	bytesDiff := int64(len(r.Data) - len(n.data()))
	if ctx.multi {
		ctx.undo = append(ctx.undo, undoRec{op: undoSetData, n: n, data: n.data(),
			version: n.version, mzxid: n.mzxid, mtime: n.mtime})
	}
	p := pathHash(r.Path)
	t.digest -= t.ownHash(p, n)
	t.touch(n)
	t.dataSize += bytesDiff
	n.setData(r.Data)
	n.version++
	n.mzxid = ctx.zxid
	n.mtime = ctx.txn.Time
	t.digest += t.ownHash(p, n)
	t.updateQuota(ctx, r.Path, 0, bytesDiff)
	ctx.emit(jute.EventNodeDataChanged, r.Path)
	return n, jute.OK
}

// setACL validates and applies a setACL. It fires no events.
func (t *Tree) setACL(ctx *applyCtx, r *jute.SetACLRequest) (*node, jute.Code) {
	if ValidatePath(r.Path) != jute.OK {
		return nil, jute.BadArguments
	}
	acl, code := t.fixupACL(r.ACL, ctx.txn.IDs)
	if code != jute.OK {
		return nil, code
	}
	n := t.lookup(r.Path)
	if n == nil {
		return nil, jute.NoNode
	}
	if !t.allowed(n, ctx.txn.IDs, jute.PermAdmin) {
		return nil, jute.NoAuth
	}
	if code := checkVersion(n.aversion, r.Version); code != jute.OK {
		return nil, code
	}
	p := pathHash(r.Path)
	t.digest -= t.ownHash(p, n)
	t.touch(n)
	old := n.acl()
	n.setACL(t.acls.intern(acl))
	t.acls.release(old)
	n.aversion++
	t.digest += t.ownHash(p, n)
	return n, jute.OK
}

// check validates a version check (inside multi, or top-level).
func (t *Tree) check(ctx *applyCtx, path string, version int32) jute.Code {
	if ValidatePath(path) != jute.OK {
		return jute.BadArguments
	}
	n := t.lookup(path)
	if n == nil {
		return jute.NoNode
	}
	if !t.allowed(n, ctx.txn.IDs, jute.PermRead) {
		return jute.NoAuth
	}
	return checkVersion(n.version, version)
}

// closeSession deletes every ephemeral node of the session in sorted path
// order, all with the closeSession's zxid.
func (t *Tree) closeSession(ctx *applyCtx) {
	set := t.ephemerals[ctx.txn.SessionID]
	if len(set) == 0 {
		return
	}
	paths := make([]string, 0, len(set))
	for p := range set {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		l := t.locate(p)
		t.deleteNode(ctx, l, t.child(l.parent, l.name))
	}
}
