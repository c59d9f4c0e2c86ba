package server

import "github.com/zkserverd/zkserverd/jute"

// execRead answers a read-only request from the local tree. It runs after
// the outcomes of the connection's earlier writes and before any later
// write is applied: on the completer, or on the FSM goroutine just before
// such a write (pipeline_early.go). It returns nil when it queued the
// reply itself, or kept it in p (requests that register a watch, see
// execWatching).
func (c *conn) execRead(p *pending) []byte {
	if frame, handled := c.execWatching(p); handled {
		return frame
	}
	code, body := c.read(p)
	return replyFrame(p.xid, c.s.node.LastZxid(), code, body)
}

// read dispatches a read opcode with the identities the request came
// with. A watch (only when execWatching falls back to it) is registered
// inside the tree's read lock (the callbacks), so no write can slip
// between the read and the watch.
func (c *conn) read(p *pending) (jute.Code, jute.Record) {
	tree := c.s.node.Tree()
	ids := p.ids
	switch op, req := p.op, p.req; op {
	case jute.OpExists, jute.OpGetData, jute.OpGetChildren, jute.OpGetChildren2:
		r := req.(*jute.PathWatchRequest)
		code, body, _ := c.readPath(op, r.Path, ids, c.watchCallback(op, r))
		return code, body
	case jute.OpGetACL:
		r := req.(*jute.PathRequest)
		acls, stat, code := tree.GetACL(r.Path, ids)
		return code, &jute.GetACLResponse{ACL: acls, Stat: stat}
	case jute.OpGetAllChildrenNumber:
		r := req.(*jute.PathRequest)
		n, code := tree.GetAllChildrenNumber(r.Path, ids)
		return code, &jute.IntResponse{Value: n}
	case jute.OpGetEphemerals:
		r := req.(*jute.PathRequest)
		return jute.OK, &jute.PathsResponse{Paths: tree.GetEphemerals(c.sessionID.Load(), r.Path)}
	case jute.OpMultiRead:
		return jute.OK, c.multiRead(req.(*jute.MultiRequest), ids)
	case jute.OpWhoAmI:
		return jute.OK, &jute.WhoAmIResponse{ClientInfo: c.s.auth.ClientInfo(ids)}
	default:
		return c.watchOp(op, req)
	}
}

// readPath runs exists, getData, getChildren or getChildren2 on path,
// calling watch (may be nil) under the tree's read lock as the tree's reads
// do, and returns the reply body and the node's Stat.
func (c *conn) readPath(op jute.OpCode, path string, ids []jute.ID, watch func(bool)) (jute.Code, jute.Record, jute.Stat) {
	tree := c.s.node.Tree()
	switch op {
	case jute.OpExists:
		st, code := tree.Exists(path, watch)
		return code, &jute.StatResponse{Stat: st}, st
	case jute.OpGetData:
		data, st, code := tree.GetData(path, ids, watch)
		return code, &jute.GetDataResponse{Data: data, Stat: st}, st
	case jute.OpGetChildren:
		kids, st, code := tree.GetChildren(path, ids, watch)
		return code, &jute.GetChildrenResponse{Children: kids}, st
	default: // OpGetChildren2
		kids, st, code := tree.GetChildren(path, ids, watch)
		return code, &jute.GetChildren2Response{Children: kids, Stat: st}, st
	}
}

// multiRead runs each getData/getChildren op independently; failures are
// per-op results. multiRead never sets watches.
func (c *conn) multiRead(m *jute.MultiRequest, ids []jute.ID) *jute.MultiResponse {
	tree := c.s.node.Tree()
	resp := &jute.MultiResponse{Results: make([]jute.MultiResult, 0, len(m.Ops))}
	for _, op := range m.Ops {
		path := op.Request.(*jute.PathWatchRequest).Path
		var res jute.MultiResult
		if op.Type == jute.OpGetData {
			data, stat, code := tree.GetData(path, ids, nil)
			res = jute.MultiResult{Type: op.Type, Err: code, Response: &jute.GetDataResponse{Data: data, Stat: stat}}
		} else {
			kids, _, code := tree.GetChildren(path, ids, nil)
			res = jute.MultiResult{Type: op.Type, Err: code, Response: &jute.GetChildrenResponse{Children: kids}}
		}
		if res.Err != jute.OK {
			res = jute.MultiResult{Type: jute.OpError, Err: res.Err}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp
}
