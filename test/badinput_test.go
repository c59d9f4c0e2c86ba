package test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

// Byte builders for hand-made request bodies.
func be32(v int32) []byte        { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func be64(v int64) []byte        { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func jstr(s string) []byte       { return append(be32(int32(len(s))), s...) }
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

var (
	nullField = be32(-1) // a null ustring, buffer or vector
	openACL   = cat(be32(1), be32(31), jstr("world"), jstr("anyone"))
	multiEnd  = []byte{0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff}
)

// request is a request payload: the header, then the body bytes.
func request(xid int32, op jute.OpCode, body ...[]byte) []byte {
	return cat(append([][]byte{be32(xid), be32(int32(op))}, body...)...)
}

// multiOp is one (MultiHeader, body) pair of a multi request.
func multiOp(op jute.OpCode, body ...[]byte) []byte {
	return cat(append([][]byte{be32(int32(op)), {0}, be32(-1)}, body...)...)
}

// createBody is a CreateRequest: path, data, acl, flags.
func createBody(path []byte, acl []byte, flags int32) []byte {
	return cat(path, jstr("d"), acl, be32(flags))
}

// badReply is what a bad request must get back.
type badReply struct {
	xid    int32 // the reply's xid: always the request's (checked by the test loop)
	err    jute.Code
	body   []byte // the exact reply body after the header (nil: none)
	closed bool   // the server then closes the connection
	silent bool   // no reply at all, the connection is closed
}

type badInput struct {
	name    string
	payload []byte // the request frame's payload
	want    badReply
	// zkCrash marks input that stops or hangs Apache ZooKeeper 3.8.0
	// itself (see docs/compatibility.md); a reference run does not send it.
	zkCrash bool
	// zk is Apache ZooKeeper 3.8.0's answer where zkserverd's differs on
	// purpose (docs/compatibility.md); a reference run expects it.
	zk *badReply
}

// badInputs lists the hostile requests of docs/reliability.md and the
// answers Apache ZooKeeper 3.8 gives them (or, where it crashes or hangs,
// the documented answer of docs/compatibility.md). The node /bad exists.
func badInputs() []badInput {
	me := badReply{err: jute.MarshallingError}
	ba := badReply{err: jute.BadArguments}
	meEnd := badReply{err: jute.MarshallingError, body: multiEnd}
	getData := multiOp(jute.OpGetData, jstr("/bad"), []byte{0})
	create := multiOp(jute.OpCreate, createBody(jstr("/bad/m"), openACL, 0))
	cases := []badInput{
		// multi and multiRead holding the wrong kinds of op.
		{name: "multi: write then getData", payload: request(1, jute.OpMulti, create, getData, multiEnd), want: me},
		{name: "multi: getData then write", payload: request(1, jute.OpMulti, getData, create, multiEnd), want: me},
		{name: "multi: only reads", payload: request(1, jute.OpMulti, getData, multiEnd), want: me},
		{name: "multi: getChildren only", payload: request(1, jute.OpMulti, multiOp(jute.OpGetChildren, jstr("/bad"), []byte{0}), multiEnd), want: me},
		{name: "multiRead: write", payload: request(1, jute.OpMultiRead, create, multiEnd), want: badReply{err: jute.MarshallingError, body: multiEnd}},
		{name: "multiRead: read then write", payload: request(1, jute.OpMultiRead, getData, create, multiEnd), want: me},
		{name: "multi: unknown op type 99", payload: request(1, jute.OpMulti, multiOp(99, jstr("/bad")), multiEnd), want: me},
		{name: "multi: op type 0", payload: request(1, jute.OpMulti, multiOp(0, jstr("/bad")), multiEnd), want: me},
		{name: "multi: exists op", payload: request(1, jute.OpMulti, multiOp(jute.OpExists, jstr("/bad"), []byte{0}), multiEnd), want: me},
		{name: "multi: nested multi", payload: request(1, jute.OpMulti, multiOp(jute.OpMulti, multiEnd), multiEnd), want: me},
		{name: "multi: error type without done", payload: request(1, jute.OpMulti, multiOp(jute.OpError), multiEnd), want: me},
		{name: "multi: no end marker", payload: request(1, jute.OpMulti, create), want: me},
		{name: "multi: truncated op", payload: request(1, jute.OpMulti, multiOp(jute.OpDelete, jstr("/bad"))), want: me},
		// Length prefixes and counts inside records.
		{name: "getData: negative path length", payload: request(1, jute.OpGetData, be32(-2), []byte{0}), want: me},
		{name: "getData: huge path length", payload: request(1, jute.OpGetData, be32(0x7fffffff), []byte{0}), want: me},
		{name: "setData: huge data length", payload: request(1, jute.OpSetData, jstr("/bad"), be32(0x7ffffff0), be32(-1)), want: me},
		{name: "create: huge ACL count", payload: request(1, jute.OpCreate, jstr("/bad/x"), jstr(""), be32(0x7fffffff), be32(0)), want: me},
		{name: "create: negative ACL count", payload: request(1, jute.OpCreate, jstr("/bad/x"), jstr(""), be32(-7), be32(0)), want: me, zk: &badReply{err: jute.InvalidACL}},
		{name: "setWatches: huge vector", payload: request(1, jute.OpSetWatches, be64(0), be32(0x10000000)), want: me},
		// Paths.
		{name: "create: invalid UTF-8", payload: request(1, jute.OpCreate, createBody(jstr("/bad/\xff\xfe"), openACL, 0)), want: ba},
		{name: "setData: invalid UTF-8", payload: request(1, jute.OpSetData, jstr("/bad\xc3"), jstr(""), be32(-1)), want: ba},
		{name: "getData: invalid UTF-8", payload: request(1, jute.OpGetData, jstr("/\xff"), []byte{0}), want: badReply{err: jute.NoNode}},
		{name: "create: no slash", payload: request(1, jute.OpCreate, createBody(jstr("bad"), openACL, 0)), want: ba},
		{name: "create: NUL", payload: request(1, jute.OpCreate, createBody(jstr("/bad/a\x00b"), openACL, 0)), want: ba},
		{name: "delete: relative", payload: request(1, jute.OpDelete, jstr("bad"), be32(-1)), want: ba},
		// ACL lists.
		{name: "create: null scheme and id", payload: request(1, jute.OpCreate, createBody(jstr("/bad/x"), cat(be32(1), be32(31), nullField, nullField), 0)), want: badReply{err: jute.InvalidACL}},
		{name: "create: null ACL vector", payload: request(1, jute.OpCreate, createBody(jstr("/bad/x"), nullField, 0)), want: badReply{err: jute.InvalidACL}},
		{name: "setACL: null id", payload: request(1, jute.OpSetACL, jstr("/bad"), cat(be32(1), be32(31), jstr("world"), nullField), be32(-1)), want: me},
		// Null strings where a path or credentials belong.
		{name: "create: null path", payload: request(1, jute.OpCreate, createBody(nullField, openACL, 0)), want: me},
		{name: "delete: null path", payload: request(1, jute.OpDelete, nullField, be32(-1)), want: me},
		{name: "setData: null path", payload: request(1, jute.OpSetData, nullField, jstr(""), be32(-1)), want: ba},
		{name: "getData: null path", payload: request(1, jute.OpGetData, nullField, []byte{0}), want: me},
		{name: "exists: null path", payload: request(1, jute.OpExists, nullField, []byte{0}), want: me},
		{name: "getChildren: null path", payload: request(1, jute.OpGetChildren, nullField, []byte{0}), want: me},
		{name: "getACL: null path", payload: request(1, jute.OpGetACL, nullField), want: me},
		{name: "getAllChildrenNumber: null path", payload: request(1, jute.OpGetAllChildrenNumber, nullField), want: me},
		{name: "getEphemerals: null prefix", payload: request(1, jute.OpGetEphemerals, nullField), want: badReply{err: jute.OK, body: be32(0)}},
		{name: "sync: null path", payload: request(1, jute.OpSync, nullField), want: badReply{err: jute.OK, body: nullField}},
		{name: "addWatch: null path", payload: request(1, jute.OpAddWatch, nullField, be32(0)), want: badReply{err: jute.OK, body: be32(0)}},
		{name: "checkWatches: null path", payload: request(1, jute.OpCheckWatches, nullField, be32(1)), want: me},
		{name: "removeWatches: null path", payload: request(1, jute.OpRemoveWatches, nullField, be32(1)), want: badReply{err: jute.NoWatcher}},
		{name: "setWatches: null path in a list", payload: request(1, jute.OpSetWatches, be64(0), be32(1), nullField, be32(0), be32(0)), want: me},
		{name: "setACL: null path", payload: request(1, jute.OpSetACL, nullField, openACL, be32(-1)), want: ba},
		{name: "create: world with null id", payload: request(1, jute.OpCreate, createBody(jstr("/bad/x"), cat(be32(1), be32(31), jstr("world"), nullField), 0)), want: me},
		{name: "create: digest with null id", payload: request(1, jute.OpCreate, createBody(jstr("/bad/x"), cat(be32(1), be32(31), jstr("digest"), nullField), 0)), want: me},
		{name: "create: auth with null id", payload: request(1, jute.OpCreate, createBody(jstr("/bad/x"), cat(be32(1), be32(31), jstr("auth"), nullField), 0)), want: badReply{err: jute.InvalidACL}},
		{name: "multi: create with null path", payload: request(1, jute.OpMulti, multiOp(jute.OpCreate, createBody(nullField, openACL, 0)), multiEnd), want: meEnd},
		{name: "multi: setData with null path", payload: request(1, jute.OpMulti, multiOp(jute.OpSetData, nullField, jstr(""), be32(-1)), multiEnd), want: meEnd},
		{name: "multiRead: getData with null path", payload: request(1, jute.OpMultiRead, multiOp(jute.OpGetData, nullField, []byte{0}), multiEnd), want: meEnd},
		{name: "auth: null scheme", payload: request(-4, jute.OpAuth, be32(0), nullField, jstr("a:b")), want: badReply{err: jute.AuthFailed, closed: true}},
		{name: "auth: digest with null credentials", payload: request(-4, jute.OpAuth, be32(0), jstr("digest"), nullField), want: badReply{err: jute.AuthFailed, closed: true}},
		{name: "auth: ip with null credentials", payload: request(-4, jute.OpAuth, be32(0), jstr("ip"), nullField), want: badReply{err: jute.OK}},
		// Create flags and TTLs.
		{name: "create: flags 7", payload: request(1, jute.OpCreate, createBody(jstr("/bad/x"), openACL, 7)), want: ba},
		{name: "create: flags -1", payload: request(1, jute.OpCreate, createBody(jstr("/bad/x"), openACL, -1)), want: ba},
		{name: "createTTL: ttl 0", payload: request(1, jute.OpCreateTTL, createBody(jstr("/bad/x"), openACL, 5), be64(0)), want: ba},
		{name: "createTTL: ttl too large", payload: request(1, jute.OpCreateTTL, createBody(jstr("/bad/x"), openACL, 5), be64(jute.MaxTTL+1)), want: ba},
		{name: "createTTL: negative ttl", payload: request(1, jute.OpCreateTTL, createBody(jstr("/bad/x"), openACL, 6), be64(-5)), want: ba},
		{name: "createTTL: non-TTL flags", payload: request(1, jute.OpCreateTTL, createBody(jstr("/bad/x"), openACL, 0), be64(-1)), want: ba, zkCrash: true},
		{name: "create2: TTL flags", payload: request(1, jute.OpCreate2, createBody(jstr("/bad/x"), openACL, 5)), want: ba},
		// Reserved xids on ordinary requests: echoed.
		{name: "getData with xid -1", payload: request(-1, jute.OpGetData, jstr("/missing"), []byte{0}), want: badReply{err: jute.NoNode}},
		{name: "getData with xid -4", payload: request(-4, jute.OpGetData, jstr("/missing"), []byte{0}), want: badReply{err: jute.NoNode}},
		{name: "getData with xid -2", payload: request(-2, jute.OpGetData, jstr("/missing"), []byte{0}), want: badReply{err: jute.NoNode}},
		{name: "exists with xid 0", payload: request(0, jute.OpExists, jstr("/missing"), []byte{0}), want: badReply{err: jute.NoNode}},
		{name: "auth with xid 5", payload: request(5, jute.OpAuth, be32(0), jstr("digest"), jstr("a:b")), want: badReply{err: jute.OK}},
		{name: "getData with xid -8", payload: request(-8, jute.OpGetData, jstr("/missing"), []byte{0}), want: badReply{err: jute.NoNode}},
		// Opcodes a client may not send.
		{name: "opcode 0", payload: request(1, 0), want: badReply{err: jute.Unimplemented, closed: true}},
		{name: "opcode 10", payload: request(1, 10), want: badReply{err: jute.Unimplemented, closed: true}},
		{name: "opcode -10 (createSession)", payload: request(1, jute.OpCreateSession), want: badReply{err: jute.Unimplemented, closed: true},
			zk: &badReply{err: jute.MarshallingError}},
		{name: "opcode 20 (deleteContainer)", payload: request(1, jute.OpDeleteContainer, jstr("/bad")), want: badReply{err: jute.Unimplemented, closed: true},
			zk: &badReply{err: jute.BadArguments}},
		{name: "top-level check", payload: request(1, jute.OpCheck, jstr("/bad"), be32(-1)), want: badReply{err: jute.OK}, zkCrash: true},
	}
	return append(cases, emptyBodies()...)
}

// emptyBodies is a header-only request of every opcode whose request has
// a body: undecodable, so MarshallingError, and the connection stays.
func emptyBodies() []badInput {
	var out []badInput
	for _, op := range jute.ClientOpCodes {
		want := badReply{err: jute.MarshallingError}
		switch op {
		case jute.OpPing, jute.OpCloseSession, jute.OpWhoAmI:
			continue // no body: not bad input
		case jute.OpAuth, jute.OpSASL:
			want = badReply{silent: true}
		}
		out = append(out, badInput{name: "empty body: " + op.String(), payload: request(1, op), want: want})
	}
	return out
}

// TestBadRequestsGetZooKeeperAnswers sends each bad request on a fresh
// session and checks the exact reply, then that the connection (when it
// stays) and the server still serve a well-behaved client. With
// ZK_REFERENCE_ADDR set it runs against that server instead (for example
// Apache ZooKeeper 3.8) and logs every mismatch without failing.
func TestBadRequestsGetZooKeeperAnswers(t *testing.T) {
	addr, reference := os.LookupEnv("ZK_REFERENCE_ADDR")
	if !reference {
		cfg := testConfig(t, t.TempDir())
		cfg.ExtendedTypesEnabled = true // as the reference run's server
		addr = startServer(t, cfg).Addr().String()
	}
	setup := dialRaw(t, addr)
	if _, err := setup.handshake(jute.ConnectRequest{TimeOut: 30000}); err != nil {
		t.Fatal(err)
	}
	setup.call(jute.OpCreate, &jute.CreateRequest{Path: "/bad", ACL: jute.OpenACLUnsafe})
	for _, c := range badInputs() {
		if reference && c.zkCrash {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if reference && c.zk != nil {
				want = *c.zk
			}
			got := sendBad(t, addr, c.payload, want.closed || want.silent)
			if reqXid := int32(binary.BigEndian.Uint32(c.payload)); !got.silent && got.xid != reqXid {
				t.Errorf("reply xid %d, want the request's %d", got.xid, reqXid)
			}
			if got.err != want.err || !bytes.Equal(got.body, want.body) || got.closed != want.closed || got.silent != want.silent {
				msg := "got err %v body %s closed %v silent %v; want err %v body %s closed %v silent %v"
				args := []any{got.err, hex.EncodeToString(got.body), got.closed, got.silent,
					want.err, hex.EncodeToString(want.body), want.closed, want.silent}
				if reference {
					t.Logf("MISMATCH %s: "+msg, append([]any{c.name}, args...)...)
					return
				}
				t.Errorf(msg, args...)
			}
		})
	}
	if !reference {
		checkWellBehavedClient(t, addr)
	}
}

// sendBad sends one request payload on a new session and reports the reply.
// closing says whether the server is expected to close the connection; if
// it is not, the connection must still answer an exists.
func sendBad(t *testing.T, addr string, payload []byte, closing bool) badReply {
	t.Helper()
	raw := dialRaw(t, addr)
	if _, err := raw.handshake(jute.ConnectRequest{TimeOut: 30000}); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	raw.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := raw.c.Write(cat(be32(int32(len(payload))), payload)); err != nil {
		t.Fatalf("write: %v", err)
	}
	b, err := raw.readFrame(5 * time.Second)
	if err != nil {
		if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
			t.Fatalf("no reply and no close within 5 s")
		}
		return badReply{silent: true}
	}
	var h jute.ReplyHeader
	d := jute.NewDecoder(b)
	h.Decode(d)
	got := badReply{xid: h.Xid, err: h.Err}
	if rest := d.Rest(); len(rest) > 0 {
		got.body = append([]byte(nil), rest...)
	}
	if closing {
		_, err := raw.readFrame(2 * time.Second)
		ne, timeout := err.(interface{ Timeout() bool })
		got.closed = err != nil && !(timeout && ne.Timeout())
		return got
	}
	if h, _ := raw.call(jute.OpExists, &jute.PathWatchRequest{Path: "/bad"}); h.Err != jute.OK {
		t.Errorf("connection unusable after the bad request: exists /bad: %v", h.Err)
	}
	return got
}

// checkWellBehavedClient asserts a go-zookeeper client can create and read
// a znode.
func checkWellBehavedClient(t *testing.T, addr string) {
	t.Helper()
	c, _ := testutil.Connect(t, addr, 5*time.Second)
	path, err := c.Create("/well-behaved", []byte("ok"), 0, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("create after bad input: %v", err)
	}
	data, _, err := c.Get(path)
	if err != nil || string(data) != "ok" {
		t.Fatalf("get after bad input: %q %v", data, err)
	}
}
