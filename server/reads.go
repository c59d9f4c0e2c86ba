package server

import (
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/watch"
)

// execRead answers a read-only request from the local tree. It runs on the
// completer, after every earlier request of the connection has completed.
func (c *conn) execRead(p *pending) []byte {
	code, body := c.read(p.op, p.req)
	zxid := c.s.node.LastZxid()
	if p.op == jute.OpSASL {
		zxid = 0
	}
	return replyFrame(p.xid, zxid, code, body)
}

// read dispatches a read opcode. Watch registration happens inside the
// tree's read lock (the callbacks), so no write can slip between the read
// and the watch.
func (c *conn) read(op jute.OpCode, req jute.Record) (jute.Code, jute.Record) {
	tree := c.s.node.Tree()
	switch op {
	case jute.OpExists:
		r := req.(*jute.PathWatchRequest)
		stat, code := tree.Exists(r.Path, c.watchOnExists(r))
		return code, &jute.StatResponse{Stat: stat}
	case jute.OpGetData:
		r := req.(*jute.PathWatchRequest)
		data, stat, code := tree.GetData(r.Path, c.authIDs(), c.watchIfExists(r, watch.Data))
		return code, &jute.GetDataResponse{Data: data, Stat: stat}
	case jute.OpGetChildren:
		r := req.(*jute.PathWatchRequest)
		kids, _, code := tree.GetChildren(r.Path, c.authIDs(), c.watchIfExists(r, watch.Child))
		return code, &jute.GetChildrenResponse{Children: kids}
	case jute.OpGetChildren2:
		r := req.(*jute.PathWatchRequest)
		kids, stat, code := tree.GetChildren(r.Path, c.authIDs(), c.watchIfExists(r, watch.Child))
		return code, &jute.GetChildren2Response{Children: kids, Stat: stat}
	case jute.OpGetACL:
		r := req.(*jute.PathRequest)
		acls, stat, code := tree.GetACL(r.Path, c.authIDs())
		return code, &jute.GetACLResponse{ACL: acls, Stat: stat}
	case jute.OpGetAllChildrenNumber:
		r := req.(*jute.PathRequest)
		n, code := tree.GetAllChildrenNumber(r.Path, c.authIDs())
		return code, &jute.IntResponse{Value: n}
	case jute.OpGetEphemerals:
		r := req.(*jute.PathRequest)
		return jute.OK, &jute.PathsResponse{Paths: tree.GetEphemerals(c.sessionID.Load(), r.Path)}
	case jute.OpMultiRead:
		return jute.OK, c.multiRead(req.(*jute.MultiRequest))
	case jute.OpWhoAmI:
		return jute.OK, &jute.WhoAmIResponse{ClientInfo: c.s.auth.ClientInfo(c.authIDs())}
	case jute.OpSASL:
		return jute.OK, &jute.SASLToken{}
	}
	return c.watchOp(op, req)
}

// multiRead runs each getData/getChildren op independently; failures are
// per-op results. multiRead never sets watches.
func (c *conn) multiRead(m *jute.MultiRequest) *jute.MultiResponse {
	tree := c.s.node.Tree()
	ids := c.authIDs()
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
