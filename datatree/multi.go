package datatree

import "github.com/zkserverd/zkserverd/jute"

// undoOp says how to revert one applied sub-op of a multi.
type undoOp uint8

const (
	undoCreate undoOp = iota + 1
	undoDelete
	undoSetData
)

// undoRec holds what is needed to revert one applied sub-op.
type undoRec struct {
	op       undoOp
	n        *node
	loc      loc // where n was linked (create, delete)
	data     []byte
	cversion int32
	version  int32
	pzxid    int64
	mzxid    int64
	mtime    int64
}

// multiOpAllowed reports whether op may appear in a multi, as ZooKeeper's
// MultiOperationRecord accepts it.
func multiOpAllowed(op jute.OpCode) bool {
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
		jute.OpDelete, jute.OpSetData, jute.OpCheck:
		return true
	}
	return false
}

// applyMulti applies the ops in order, each against the state left by the
// earlier ones. The first failure reverts everything: earlier ops report
// code 0, the failing op its code, later ops RuntimeInconsistency, and no
// events fire. The header err is OK either way, as in ZooKeeper. A request
// holding an op that may not appear in a multi (for example a read) fails
// as a whole with MarshallingError.
func (t *Tree) applyMulti(ctx *applyCtx, res *Result) {
	resp := &jute.MultiResponse{}
	res.Response = resp
	req, ok := ctx.txn.Request.(*jute.MultiRequest)
	if !ok {
		res.Err = jute.MarshallingError
		return
	}
	for _, op := range req.Ops {
		if !multiOpAllowed(op.Type) || !requestMatches(op.Type, op.Request) {
			res.Err = jute.MarshallingError
			return
		}
	}
	ctx.multi = true
	ctx.digest = t.digest
	resp.Results = make([]jute.MultiResult, len(req.Ops))
	for i, op := range req.Ops {
		r, code := t.applyMultiOp(ctx, op)
		if code != jute.OK {
			t.rollback(ctx)
			fillFailure(resp.Results, i, code)
			return
		}
		resp.Results[i] = r
	}
}

// applyMultiOp applies one sub-op and builds its result as ZooKeeper 3.8
// reports it: create and create2 as a type-1 CreateResponse, container and
// TTL creates as a type-15 Create2Response.
func (t *Tree) applyMultiOp(ctx *applyCtx, op jute.MultiOp) (jute.MultiResult, jute.Code) {
	switch op.Type {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		n, path, code := t.create(ctx, op.Type, createArgsOf(op.Request))
		if code != jute.OK {
			return jute.MultiResult{}, code
		}
		if op.Type == jute.OpCreate || op.Type == jute.OpCreate2 {
			return jute.MultiResult{Type: jute.OpCreate, Response: &jute.CreateResponse{Path: path}}, jute.OK
		}
		r := &jute.Create2Response{Path: path}
		n.stat(&r.Stat)
		return jute.MultiResult{Type: jute.OpCreate2, Response: r}, jute.OK
	case jute.OpDelete:
		r := op.Request.(*jute.DeleteRequest)
		return jute.MultiResult{Type: jute.OpDelete}, t.delete(ctx, r.Path, r.Version)
	case jute.OpSetData:
		n, code := t.setData(ctx, op.Request.(*jute.SetDataRequest))
		if code != jute.OK {
			return jute.MultiResult{}, code
		}
		r := &jute.StatResponse{}
		n.stat(&r.Stat)
		return jute.MultiResult{Type: jute.OpSetData, Response: r}, jute.OK
	case jute.OpCheck:
		r := op.Request.(*jute.CheckVersionRequest)
		return jute.MultiResult{Type: jute.OpCheck}, t.check(ctx, r.Path, r.Version)
	}
	return jute.MultiResult{}, jute.MarshallingError
}

// fillFailure writes the results of a multi whose op failed failed with
// code: 0 before it, code at it, RuntimeInconsistency after it.
func fillFailure(results []jute.MultiResult, failed int, code jute.Code) {
	for i := range results {
		c := jute.OK
		switch {
		case i == failed:
			c = code
		case i > failed:
			c = jute.RuntimeInconsistency
		}
		results[i] = jute.MultiResult{Type: jute.OpError, Err: c}
	}
}

// rollback reverts the applied sub-ops in reverse order and drops their
// events, leaving the tree exactly as before the multi, and so with the
// digest it had then.
func (t *Tree) rollback(ctx *applyCtx) {
	for i := len(ctx.undo) - 1; i >= 0; i-- {
		u := &ctx.undo[i]
		switch u.op {
		case undoCreate:
			t.unlink(u.loc, u.n)
			t.acls.release(u.n.acl())
			u.loc.parent.cversion = u.cversion
			u.loc.parent.pzxid = u.pzxid
		case undoDelete:
			t.acls.addRef(u.n.acl())
			t.link(u.loc, u.n)
			u.loc.parent.pzxid = u.pzxid
		case undoSetData:
			t.dataSize += int64(len(u.data) - len(u.n.data()))
			u.n.setData(u.data)
			u.n.version = u.version
			u.n.mzxid = u.mzxid
			u.n.mtime = u.mtime
		}
	}
	ctx.undo = ctx.undo[:0]
	ctx.events = ctx.events[:0]
	t.digest = ctx.digest
}
