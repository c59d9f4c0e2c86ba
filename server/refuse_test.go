package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/test/ports"
)

// Raw request bodies for refusals that never decode into a record.
func be32(v int32) []byte  { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func jstr(s string) []byte { return append(be32(int32(len(s))), s...) }
func cat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

var (
	nullStr   = be32(-1)
	worldACL  = cat(be32(1), be32(31), jstr("world"), jstr("anyone"))
	multiDone = []byte{0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff}
)

// rawMultiOp is one (MultiHeader, body) pair of a multi request.
func rawMultiOp(op jute.OpCode, body ...[]byte) []byte {
	return cat(append([][]byte{be32(int32(op)), {0}, be32(-1)}, body...)...)
}

// rawCreate is a CreateRequest: path, data, acl, flags.
func rawCreate(path, acl []byte, flags int32) []byte {
	return cat(path, jstr("d"), acl, be32(flags))
}

// spent is how a refused request moves the zxid.
type spent int

const (
	none   spent = iota // no zxid: the reply carries the last one
	txn                 // an error transaction: the reply carries its zxid
	burned              // a zxid taken, no transaction: the reply carries the one before
)

// refused is one request answered before the log, with Apache ZooKeeper
// 3.8.0's answer: the code, the reply body after the header (nil: none)
// and how it moves the zxid.
type refused struct {
	name  string
	op    jute.OpCode
	body  []byte
	code  jute.Code
	reply []byte
	zxid  spent
}

// refusedRequests lists the requests answered before the log; the last
// rows are writes refused in the log, for comparison.
func refusedRequests() []refused {
	getData := rawMultiOp(jute.OpGetData, jstr("/z"), []byte{0})
	create := rawMultiOp(jute.OpCreate, rawCreate(jstr("/z/m"), worldACL, 0))
	nullID := func(scheme []byte) []byte { return cat(be32(1), be32(31), scheme, nullStr) }
	me := jute.MarshallingError
	return []refused{
		{"multi: write then getData", jute.OpMulti, cat(create, getData, multiDone), me, nil, txn},
		{"multi: only reads", jute.OpMulti, cat(getData, multiDone), me, nil, txn},
		{"multi: unknown op type", jute.OpMulti, cat(rawMultiOp(99, jstr("/z")), multiDone), me, nil, txn},
		{"multi: no end marker", jute.OpMulti, create, me, nil, txn},
		{"multi: create with null path", jute.OpMulti, cat(rawMultiOp(jute.OpCreate, rawCreate(nullStr, worldACL, 0)), multiDone), me, multiDone, burned},
		{"multi: setData with null path", jute.OpMulti, cat(rawMultiOp(jute.OpSetData, nullStr, jstr(""), be32(-1)), multiDone), me, multiDone, burned},
		{"multi: delete with null path", jute.OpMulti, cat(rawMultiOp(jute.OpDelete, nullStr, be32(-1)), multiDone), me, multiDone, burned},
		{"multi: check with null path", jute.OpMulti, cat(rawMultiOp(jute.OpCheck, nullStr, be32(-1)), multiDone), me, multiDone, burned},
		{"multi: create then setData with null path", jute.OpMulti, cat(create, rawMultiOp(jute.OpSetData, nullStr, jstr(""), be32(-1)), multiDone), me, multiDone, burned},
		{"multi: create with null world id", jute.OpMulti, cat(rawMultiOp(jute.OpCreate, rawCreate(jstr("/z/y"), nullID(jstr("world")), 0)), multiDone), me, nil, txn},
		{"multi: create with digest null id", jute.OpMulti, cat(rawMultiOp(jute.OpCreate, rawCreate(jstr("/z/y"), nullID(jstr("digest")), 0)), multiDone), me, nil, txn},
		{"create: null path", jute.OpCreate, rawCreate(nullStr, worldACL, 0), me, nil, txn},
		{"create: world with null id", jute.OpCreate, rawCreate(jstr("/z/x"), nullID(jstr("world")), 0), me, nil, txn},
		{"create2: digest with null id", jute.OpCreate2, rawCreate(jstr("/z/x"), nullID(jstr("digest")), 0), me, nil, txn},
		{"setACL: null id", jute.OpSetACL, cat(jstr("/z"), nullID(jstr("world")), be32(-1)), me, nil, txn},
		{"delete: null path", jute.OpDelete, cat(nullStr, be32(-1)), me, nil, txn},
		{"create: huge ACL count", jute.OpCreate, cat(jstr("/z/x"), jstr(""), be32(0x7fffffff), be32(0)), me, nil, txn},
		{"setData: huge data length", jute.OpSetData, cat(jstr("/z"), be32(0x7ffffff0), be32(-1)), me, nil, txn},
		{"empty body: create", jute.OpCreate, nil, me, nil, txn},
		{"empty body: create2", jute.OpCreate2, nil, me, nil, txn},
		{"empty body: createContainer", jute.OpCreateContainer, nil, me, nil, txn},
		{"empty body: createTTL", jute.OpCreateTTL, nil, me, nil, txn},
		{"empty body: delete", jute.OpDelete, nil, me, nil, txn},
		{"empty body: setData", jute.OpSetData, nil, me, nil, txn},
		{"empty body: setACL", jute.OpSetACL, nil, me, nil, txn},
		{"empty body: check", jute.OpCheck, nil, me, nil, txn},
		{"empty body: multi", jute.OpMulti, nil, me, nil, txn},
		{"empty body: reconfig", jute.OpReconfig, nil, me, nil, none},
		// Reads refused.
		{"multiRead: write", jute.OpMultiRead, cat(create, multiDone), me, multiDone, none},
		{"multiRead: getData with null path", jute.OpMultiRead, cat(rawMultiOp(jute.OpGetData, nullStr, []byte{0}), multiDone), me, multiDone, none},
		{"getData: null path", jute.OpGetData, cat(nullStr, []byte{0}), me, nil, none},
		{"empty body: getData", jute.OpGetData, nil, me, nil, none},
		{"empty body: exists", jute.OpExists, nil, me, nil, none},
		{"empty body: sync", jute.OpSync, nil, me, nil, none},
		{"empty body: setWatches", jute.OpSetWatches, nil, me, nil, none},
		{"addWatch: bad mode", jute.OpAddWatch, cat(jstr("/z"), be32(7)), me, nil, none},
		{"removeWatches: bad type", jute.OpRemoveWatches, cat(jstr("/z"), be32(9)), me, nil, none},
		// Refused in the log.
		{"multi: create with null scheme", jute.OpMulti, cat(rawMultiOp(jute.OpCreate, rawCreate(jstr("/z/y"), cat(be32(1), be32(31), nullStr, jstr("anyone")), 0)), multiDone),
			jute.OK, cat(be32(-1), []byte{0}, be32(int32(jute.InvalidACL)), be32(int32(jute.InvalidACL)), multiDone), txn},
		{"create: no slash", jute.OpCreate, rawCreate(jstr("z"), worldACL, 0), jute.BadArguments, nil, txn},
		{"create: exists", jute.OpCreate, rawCreate(jstr("/z"), worldACL, 0), jute.NodeExists, nil, txn},
	}
}

// TestRefusedRequestsSpendZxidsAsZooKeeper sends each refused request on
// one session, each followed by a setData, and checks the reply and the
// zxid sequence (refuse.go): a refused write spends the next zxid, and
// its reply carries it (the one before, for a multi with a null path); a
// refused read spends none. With ZK_REFERENCE_ADDR set it runs against
// that server instead (Apache ZooKeeper 3.8, extendedTypesEnabled=true)
// and logs every difference without failing.
func TestRefusedRequestsSpendZxidsAsZooKeeper(t *testing.T) {
	addr, reference := os.LookupEnv("ZK_REFERENCE_ADDR")
	if !reference {
		cfg := opsConfig(t)
		cfg.ExtendedTypesEnabled = true
		addr = startOpsServer(t, Options{Config: cfg}).Addr().String()
	}
	w := dialRawAddr(t, addr)
	w.call(jute.OpCreate, &jute.CreateRequest{Path: "/z", ACL: jute.OpenACLUnsafe})
	last := w.call(jute.OpSetData, &jute.SetDataRequest{Path: "/z", Version: -1}).Zxid
	for _, r := range refusedRequests() {
		h, body := w.callRaw(r.op, r.body)
		next := w.call(jute.OpSetData, &jute.SetDataRequest{Path: "/z", Version: -1}).Zxid
		wantZxid, wantNext := last, last+1
		switch r.zxid {
		case txn:
			wantZxid, wantNext = last+1, last+2
		case burned:
			wantNext = last + 2
		}
		if h.Err != r.code || h.Zxid != wantZxid || next != wantNext || !bytes.Equal(body, r.reply) {
			report := t.Errorf
			if reference {
				report = t.Logf
			}
			report("%s: reply err %v zxid +%d body %x, next write +%d; want err %v zxid +%d body %x, next +%d",
				r.name, h.Err, h.Zxid-last, body, next-last, r.code, wantZxid-last, r.reply, wantNext-last)
		}
		last = next
	}
}

// dialRawAddr opens a session on addr frame by frame.
func dialRawAddr(t *testing.T, addr string) *wireClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	w := &wireClient{t: t, c: nc, br: bufio.NewReader(nc)}
	w.send(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	if _, err := w.read(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return w
}

// callRaw sends a request with a hand-made body and returns the reply
// header and the body after it (nil: none).
func (w *wireClient) callRaw(op jute.OpCode, body []byte) (jute.ReplyHeader, []byte) {
	w.t.Helper()
	w.xid++
	h := jute.AppendFrame(nil, &jute.RequestHeader{Xid: w.xid, Type: op})
	frame := append(be32(int32(len(h)-4+len(body))), h[4:]...)
	w.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := w.c.Write(append(frame, body...)); err != nil {
		w.t.Fatalf("write: %v", err)
	}
	reply, err := w.read()
	if err != nil {
		w.t.Fatalf("%v: read reply: %v", op, err)
	}
	var rh jute.ReplyHeader
	d := jute.NewDecoder(reply)
	rh.Decode(d)
	var rest []byte
	if r := d.Rest(); len(r) > 0 {
		rest = append(rest, r...)
	}
	return rh, rest
}

// TestRefusedWriteSpendsZxidOnEveryMember: a write refused on a follower
// goes through the log, so every member spends its zxid: the leader's
// next write takes the one after, and every member ends at that zxid.
func TestRefusedWriteSpendsZxidOnEveryMember(t *testing.T) {
	e := testutil.StartEnsemble(t, testutil.EnsembleSpec[*Server]{Size: 3, Ports: ports.ForServer(),
		Base: func(int) conf.Config { return opsConfig(t) },
		New: func(_ int, cfg conf.Config) (*Server, error) {
			return New(Options{Config: cfg, Logger: testutil.Logger(t, slog.LevelWarn)})
		}})
	var leader, follower *Server
	testutil.Eventually(t, 15*time.Second, "a leader", func() bool {
		for i := range e.Size() {
			if m := e.Member(i); m.node.IsLeader() {
				leader, follower = m, e.Member((i+1)%e.Size())
				return true
			}
		}
		return false
	})
	onFollower, onLeader := dialRawAddr(t, follower.Addr().String()), dialRawAddr(t, leader.Addr().String())
	h, _ := onFollower.callRaw(jute.OpCreate, rawCreate(nullStr, worldACL, 0))
	if h.Err != jute.MarshallingError {
		t.Fatalf("create with a null path on a follower: %v, want MarshallingError", h.Err)
	}
	next := onLeader.call(jute.OpCreate, &jute.CreateRequest{Path: "/after", ACL: jute.OpenACLUnsafe})
	if next.Err != jute.OK || next.Zxid != h.Zxid+1 {
		t.Fatalf("the leader's next write: %v at zxid %#x, want OK at %#x (the refusal's %#x + 1)", next.Err, next.Zxid, h.Zxid+1, h.Zxid)
	}
	for i := range e.Size() {
		m := e.Member(i)
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("member %d at zxid %#x", i+1, next.Zxid), func() bool {
			return m.node.LastZxid() == next.Zxid
		})
	}
}
