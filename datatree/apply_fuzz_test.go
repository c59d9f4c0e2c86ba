package datatree

import (
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// applyFuzzOps are the opcodes whose decoded request the server may hand
// to Apply (through the log) for a client.
var applyFuzzOps = []jute.OpCode{
	jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpDelete,
	jute.OpSetData, jute.OpSetACL, jute.OpCheck, jute.OpMulti,
}

// FuzzApplyRequest decodes a write request of any client write opcode from
// fuzzed bytes, as the server's reader does, and applies it: whatever
// decodes must apply without a panic (a panic in apply stops the member),
// with a ZooKeeper error code as the only way to fail. One tree, with
// quotas enforced and TTL nodes on, takes every input of a fuzz process
// (replaced when it grows large), so inputs build on each other's nodes.
func FuzzApplyRequest(f *testing.F) {
	seeds := []struct {
		op  jute.OpCode
		req jute.Record
	}{
		{jute.OpCreate, &jute.CreateRequest{Path: "/a", Data: []byte("x"), ACL: open}},
		{jute.OpCreate, &jute.CreateRequest{Path: "/a/", ACL: open, Flags: 3}},
		{jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/t", ACL: open, Flags: 5, TTL: 10}},
		{jute.OpCreateContainer, &jute.CreateRequest{Path: "/c", ACL: aliceA}},
		{jute.OpCreate, &jute.CreateRequest{Path: "/zookeeper/quota/a/zookeeper_limits", Data: []byte("count=1,bytes=-1"), ACL: open}},
		{jute.OpSetData, &jute.SetDataRequest{Path: "/a", Data: []byte("y"), Version: -1}},
		{jute.OpSetACL, &jute.SetACLRequest{Path: "/a", ACL: []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "ip", ID: "10.0.0.0/8"}}}, Version: -1}},
		{jute.OpDelete, &jute.DeleteRequest{Path: "/a", Version: -1}},
		{jute.OpCheck, &jute.CheckVersionRequest{Path: "/", Version: 0}},
		{jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Request: &jute.CreateRequest{Path: "/m", ACL: open}},
			{Type: jute.OpGetData, Request: &jute.PathWatchRequest{Path: "/m"}},
			{Type: jute.OpDelete, Request: &jute.DeleteRequest{Path: "/m", Version: -1}}}}},
	}
	for _, s := range seeds {
		for i, op := range applyFuzzOps {
			if op == s.op {
				f.Add(uint8(i), jute.Encode(s.req), int64(0x100))
			}
		}
	}
	cfg := Config{ExtendedTypesEnabled: true, EnforceQuota: true, Authorizer: testAuth{}}
	tree := New(cfg)
	zxid := int64(0)
	f.Fuzz(func(t *testing.T, pick uint8, body []byte, session int64) {
		op := applyFuzzOps[int(pick)%len(applyFuzzOps)]
		req := jute.NewRequest(op)
		if jute.Decode(body, req) != nil {
			return
		}
		if tree.NodeCount() > 10000 {
			tree, zxid = New(cfg), 0
		}
		zxid++
		txn := &Txn{Type: op, SessionID: session, Time: zxid * 1000, Request: req, IDs: []jute.ID{alice}}
		res := tree.Apply(txn, zxid, nil)
		if strings.HasPrefix(res.Err.String(), "Code(") {
			t.Fatalf("apply answered an unnamed code %d", int32(res.Err))
		}
	})
}
