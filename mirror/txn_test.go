package mirror

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/internal/zkimport"
	"github.com/zkserverd/zkserverd/jute"
)

// Encoders of ZooKeeper's txn records (zookeeper.jute), for building log
// entries by hand.

type txnRecord func(e *jute.Encoder)

func encodeACLs(e *jute.Encoder, acl []jute.ACL) {
	e.Int(int32(len(acl)))
	for i := range acl {
		acl[i].Encode(e)
	}
}

func createTxn(path, data string, ephemeral bool, parentCVersion int32) txnRecord {
	return func(e *jute.Encoder) {
		e.String(path)
		e.Buffer([]byte(data))
		encodeACLs(e, jute.OpenACLUnsafe)
		e.Bool(ephemeral)
		e.Int(parentCVersion)
	}
}

func containerTxn(path string, parentCVersion int32) txnRecord {
	return func(e *jute.Encoder) {
		e.String(path)
		e.Buffer(nil)
		encodeACLs(e, jute.OpenACLUnsafe)
		e.Int(parentCVersion)
	}
}

func ttlTxn(path string, parentCVersion int32, ttl int64) txnRecord {
	return func(e *jute.Encoder) {
		e.String(path)
		e.Buffer([]byte("t"))
		encodeACLs(e, jute.OpenACLUnsafe)
		e.Int(parentCVersion)
		e.Long(ttl)
	}
}

func pathTxn(path string) txnRecord { return func(e *jute.Encoder) { e.String(path) } }

func setDataTxn(path, data string, version int32) txnRecord {
	return func(e *jute.Encoder) {
		e.String(path)
		e.Buffer([]byte(data))
		e.Int(version)
	}
}

func setACLTxn(path string, acl []jute.ACL, version int32) txnRecord {
	return func(e *jute.Encoder) {
		e.String(path)
		encodeACLs(e, acl)
		e.Int(version)
	}
}

func checkTxn(path string, version int32) txnRecord {
	return func(e *jute.Encoder) { e.String(path); e.Int(version) }
}

func errorTxn(code jute.Code) txnRecord { return func(e *jute.Encoder) { e.Int(int32(code)) } }

func sessionTxn(timeout int32) txnRecord { return func(e *jute.Encoder) { e.Int(timeout) } }

func closeTxn(paths ...string) txnRecord {
	return func(e *jute.Encoder) {
		e.Int(int32(len(paths)))
		for _, p := range paths {
			e.String(p)
		}
	}
}

func noRecord(*jute.Encoder) {}

type sub struct {
	typ jute.OpCode
	rec txnRecord
}

func multiTxn(subs ...sub) txnRecord {
	return func(e *jute.Encoder) {
		e.Int(int32(len(subs)))
		for _, s := range subs {
			e.Int(int32(s.typ))
			var inner jute.Encoder
			s.rec(&inner)
			e.Buffer(inner.Bytes())
		}
	}
}

// step is one transaction: who, what, and an optional digest.
type step struct {
	session int64
	typ     jute.OpCode
	rec     txnRecord
	digest  *zkimport.TxnDigest
}

// entry encodes st as a log entry with zxid.
func (s step) entry(zxid int64) []byte {
	var e jute.Encoder
	e.Long(s.session)
	e.Int(int32(zxid))
	e.Long(zxid)
	e.Long(1000 + zxid)
	e.Int(int32(s.typ))
	s.rec(&e)
	if s.digest != nil {
		e.Int(s.digest.Version)
		e.Long(s.digest.Tree)
	}
	return e.Bytes()
}

const sess = int64(0x11)

func op(typ jute.OpCode, rec txnRecord) step { return step{session: sess, typ: typ, rec: rec} }

// feed applies steps to st with the zxids after its last one.
func feed(t *testing.T, st *State, steps ...step) {
	t.Helper()
	for _, s := range steps {
		z := st.LastZxid() + 1
		if err := st.Txn(z, s.entry(z)); err != nil {
			t.Fatalf("setup zxid %d: %v", z, err)
		}
	}
}

// newSynced returns a State at zxid 0 whose applied transactions go to
// *got.
func newSynced(t *testing.T, got *[]Applied) *State {
	var st *State
	st = New(Options{Logger: testLogger(t), Applied: func(a Applied) {
		// The server answers from this callback: the State's last zxid
		// must already be the transaction's, or the session's next reply
		// would carry an older one.
		if last := st.LastZxid(); last != a.Zxid {
			t.Errorf("Applied(%#x) while LastZxid is %#x", a.Zxid, last)
		}
		*got = append(*got, a)
	}})
	st.UpToDate()
	return st
}

// stored returns the node at p as stored, or fails.
func stored(t *testing.T, st *State, p string) datatree.StoredNode {
	t.Helper()
	n, ok := storedNodes(t, st.Tree())[p]
	if !ok {
		t.Fatalf("%s is missing", p)
	}
	return n
}

func absent(t *testing.T, st *State, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, code := st.Tree().Exists(p, nil); code != jute.NoNode {
			t.Errorf("%s: %s, want NoNode", p, code)
		}
	}
}

func TestTxnTranslations(t *testing.T) {
	open := jute.OpenACLUnsafe
	readOnly := []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: "world", ID: "anyone"}}}
	tests := []struct {
		name    string
		setup   []step
		txn     step
		wantErr string // "" for success
		check   func(t *testing.T, st *State, a Applied)
	}{
		{name: "create", txn: op(jute.OpCreate, createTxn("/a", "x", false, 1)),
			check: func(t *testing.T, st *State, a Applied) {
				n := stored(t, st, "/a")
				if n.Czxid != 1 || n.Ctime != 1001 || string(n.Data) != "x" || n.EphemeralOwner != 0 {
					t.Errorf("/a = %+v", n)
				}
				if r := stored(t, st, "/"); r.Cversion != 1 || r.Pzxid != 1 {
					t.Errorf("/ cversion %d pzxid %d", r.Cversion, r.Pzxid)
				}
				if cr, ok := a.Result.Response.(*jute.CreateResponse); !ok || cr.Path != "/a" || len(a.Result.Events) != 2 {
					t.Errorf("result %+v", a.Result)
				}
			}},
		{name: "create2", txn: op(jute.OpCreate2, createTxn("/a", "x", false, 1)),
			check: func(t *testing.T, st *State, a Applied) {
				if cr, ok := a.Result.Response.(*jute.Create2Response); !ok || cr.Stat.Czxid != 1 {
					t.Errorf("result %+v", a.Result.Response)
				}
			}},
		{name: "create with another parent cversion", txn: op(jute.OpCreate, createTxn("/a", "x", false, 5)),
			wantErr: "cversion 1, ZooKeeper's 5"},
		{name: "create of an existing node", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn: op(jute.OpCreate, createTxn("/a", "", false, 2)), wantErr: "NodeExists"},
		{name: "create without a parent", txn: op(jute.OpCreate, createTxn("/no/a", "", false, 1)), wantErr: "NoNode"},
		{name: "sequential node: the exact path", setup: []step{op(jute.OpCreate, createTxn("/s", "", false, 1))},
			txn: op(jute.OpCreate, createTxn("/s/n-0000000007", "", false, 1)),
			check: func(t *testing.T, st *State, a Applied) {
				stored(t, st, "/s/n-0000000007")
			}},
		{name: "ephemeral", txn: op(jute.OpCreate, createTxn("/e", "", true, 1)),
			check: func(t *testing.T, st *State, a Applied) {
				if n := stored(t, st, "/e"); n.EphemeralOwner != sess {
					t.Errorf("owner %#x", n.EphemeralOwner)
				}
				if got := st.Tree().SessionEphemerals(sess); !slices.Equal(got, []string{"/e"}) {
					t.Errorf("ephemerals %v", got)
				}
			}},
		{name: "container", txn: op(jute.OpCreateContainer, containerTxn("/c", 1)),
			check: func(t *testing.T, st *State, a Applied) {
				if n := stored(t, st, "/c"); n.EphemeralOwner != jute.ContainerOwner {
					t.Errorf("owner %#x", n.EphemeralOwner)
				}
			}},
		{name: "TTL node", txn: op(jute.OpCreateTTL, ttlTxn("/t", 1, 5000)),
			check: func(t *testing.T, st *State, a Applied) {
				if n := stored(t, st, "/t"); n.EphemeralOwner != jute.TTLOwnerMask|5000 {
					t.Errorf("owner %#x", n.EphemeralOwner)
				}
			}},
		{name: "setData", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn: op(jute.OpSetData, setDataTxn("/a", "y", 1)),
			check: func(t *testing.T, st *State, a Applied) {
				if n := stored(t, st, "/a"); n.Version != 1 || n.Mzxid != 2 || n.Mtime != 1002 || string(n.Data) != "y" {
					t.Errorf("/a = %+v", n)
				}
			}},
		{name: "setData to a version that does not follow", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn: op(jute.OpSetData, setDataTxn("/a", "y", 3)), wantErr: "BadVersion"},
		{name: "setACL", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn: op(jute.OpSetACL, setACLTxn("/a", readOnly, 1)),
			check: func(t *testing.T, st *State, a Applied) {
				if n := stored(t, st, "/a"); n.Aversion != 1 || !slices.Equal(n.ACL, readOnly) {
					t.Errorf("/a = %+v", n)
				}
			}},
		{name: "setACL to a version that does not follow", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn: op(jute.OpSetACL, setACLTxn("/a", open, 2)), wantErr: "BadVersion"},
		{name: "delete", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn: op(jute.OpDelete, pathTxn("/a")),
			check: func(t *testing.T, st *State, a Applied) {
				absent(t, st, "/a")
				if r := stored(t, st, "/"); r.Pzxid != 2 || r.Cversion != 1 {
					t.Errorf("/ pzxid %d cversion %d", r.Pzxid, r.Cversion)
				}
			}},
		{name: "delete of a missing node", txn: op(jute.OpDelete, pathTxn("/a")), wantErr: "NoNode"},
		{name: "error txn changes nothing", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn: op(jute.OpError, errorTxn(jute.NodeExists)),
			check: func(t *testing.T, st *State, a Applied) {
				if a.Type != jute.OpError || a.Result.Err != jute.NodeExists || a.Zxid != 2 {
					t.Errorf("applied %+v", a)
				}
				if n := stored(t, st, "/"); n.Pzxid != 1 {
					t.Errorf("/ changed: %+v", n)
				}
			}},
		{name: "multi", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn: op(jute.OpMulti, multiTxn(
				sub{jute.OpCreate, createTxn("/m", "", false, 2)},
				sub{jute.OpCreate, createTxn("/m/x", "", true, 1)},
				sub{jute.OpSetData, setDataTxn("/a", "z", 1)},
				sub{jute.OpCheck, checkTxn("/a", 2)},
				sub{jute.OpDelete, pathTxn("/m/x")})),
			check: func(t *testing.T, st *State, a Applied) {
				absent(t, st, "/m/x")
				if n := stored(t, st, "/m"); n.Cversion != 1 || n.Pzxid != 2 {
					t.Errorf("/m = %+v", n)
				}
				if n := stored(t, st, "/a"); n.Version != 1 {
					t.Errorf("/a = %+v", n)
				}
				if mr := a.Result.Response.(*jute.MultiResponse); len(mr.Results) != 5 || mr.Results[1].Type != jute.OpCreate {
					t.Errorf("results %+v", mr.Results)
				}
			}},
		{name: "multi with a bad check", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn:     op(jute.OpMulti, multiTxn(sub{jute.OpCreate, createTxn("/m", "", false, 2)}, sub{jute.OpCheck, checkTxn("/a", 5)})),
			wantErr: "BadVersion"},
		{name: "failed multi changes nothing", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn: op(jute.OpMulti, multiTxn(
				sub{jute.OpCreate, createTxn("/m", "", false, 2)},
				sub{jute.OpError, errorTxn(jute.BadVersion)},
				sub{jute.OpError, errorTxn(jute.RuntimeInconsistency)})),
			check: func(t *testing.T, st *State, a Applied) {
				absent(t, st, "/m")
				mr := a.Result.Response.(*jute.MultiResponse)
				var codes []jute.Code
				for _, r := range mr.Results {
					codes = append(codes, r.Err)
				}
				if a.Result.Err != jute.OK || !slices.Equal(codes, []jute.Code{jute.OK, jute.BadVersion, jute.RuntimeInconsistency}) {
					t.Errorf("err %s, codes %v", a.Result.Err, codes)
				}
			}},
		{name: "createSession", txn: op(jute.OpCreateSession, sessionTxn(4000)),
			check: func(t *testing.T, st *State, a Applied) {
				if info, ok := st.Sessions().Get(sess); !ok || info.Timeout != 4000 {
					t.Errorf("session %+v %v", info, ok)
				}
			}},
		{name: "closeSession with its ephemerals listed",
			setup: []step{op(jute.OpCreateSession, sessionTxn(4000)), op(jute.OpCreate, createTxn("/e1", "", true, 1)),
				op(jute.OpCreate, createTxn("/e2", "", true, 2))},
			txn: op(jute.OpCloseSession, closeTxn("/e2", "/e1")),
			check: func(t *testing.T, st *State, a Applied) {
				absent(t, st, "/e1", "/e2")
				if st.Sessions().Len() != 0 || len(a.Result.Events) != 4 {
					t.Errorf("sessions %d, events %v", st.Sessions().Len(), a.Result.Events)
				}
			}},
		{name: "closeSession listing other paths",
			setup: []step{op(jute.OpCreateSession, sessionTxn(4000)), op(jute.OpCreate, createTxn("/e1", "", true, 1)),
				op(jute.OpCreate, createTxn("/e2", "", true, 2))},
			txn: op(jute.OpCloseSession, closeTxn("/e1")), wantErr: "ZooKeeper deletes"},
		{name: "closeSession before 3.6 (no record)",
			setup: []step{op(jute.OpCreateSession, sessionTxn(4000)), op(jute.OpCreate, createTxn("/e1", "", true, 1))},
			txn:   op(jute.OpCloseSession, noRecord),
			check: func(t *testing.T, st *State, a Applied) { absent(t, st, "/e1") }},
		{name: "deleteContainer",
			setup: []step{op(jute.OpCreateContainer, containerTxn("/c", 1)), op(jute.OpCreate, createTxn("/c/x", "", false, 1)),
				op(jute.OpDelete, pathTxn("/c/x"))},
			txn:   op(jute.OpDeleteContainer, pathTxn("/c")),
			check: func(t *testing.T, st *State, a Applied) { absent(t, st, "/c") }},
		{name: "deleteContainer of a persistent node", setup: []step{op(jute.OpCreate, createTxn("/a", "", false, 1))},
			txn: op(jute.OpDeleteContainer, pathTxn("/a")), wantErr: "BadVersion"},
		{name: "reconfig", txn: op(jute.OpReconfig, setDataTxn(configPath, "server.1=a:1:2", -1)),
			check: func(t *testing.T, st *State, a Applied) {
				if n := stored(t, st, configPath); string(n.Data) != "server.1=a:1:2" || n.Version != -1 || n.Mzxid != 1 {
					t.Errorf("config %+v", n)
				}
				if len(a.Result.Events) != 1 || a.Result.Events[0].Type != jute.EventNodeDataChanged {
					t.Errorf("events %v", a.Result.Events)
				}
			}},
		{name: "reconfig of another node", txn: op(jute.OpReconfig, setDataTxn("/a", "x", -1)), wantErr: "reconfig"},
		{name: "wrong digest", txn: step{session: sess, typ: jute.OpCreate, rec: createTxn("/a", "", false, 1),
			digest: &zkimport.TxnDigest{Version: 2, Tree: 12345}}, wantErr: "digest"},
		{name: "digest of another version is not checked", txn: step{session: sess, typ: jute.OpCreate,
			rec: createTxn("/a", "", false, 1), digest: &zkimport.TxnDigest{Version: 1, Tree: 12345}}},
		{name: "a type ZooKeeper does not log", txn: op(jute.OpGetData, pathTxn("/a")), wantErr: "unsupported"},
		{name: "truncated entry", txn: op(jute.OpCreate, func(e *jute.Encoder) { e.String("/a") }), wantErr: "bad ZooKeeper"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []Applied
			st := newSynced(t, &got)
			feed(t, st, tc.setup...)
			before := st.Tree().Digest()
			z := st.LastZxid() + 1
			err := st.Txn(z, tc.txn.entry(z))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrDiverged) {
					t.Fatalf("err %v, want ErrDiverged with %q", err, tc.wantErr)
				}
				if st.Err() == nil || st.Synced() {
					t.Fatal("a divergence does not break the state")
				}
				if err := st.Txn(z+1, op(jute.OpError, errorTxn(jute.NoNode)).entry(z+1)); !errors.Is(err, ErrBroken) {
					t.Fatalf("Txn on a broken state: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.LastZxid() != z || len(got) != len(tc.setup)+1 || got[len(got)-1].Zxid != z || got[len(got)-1].SessionID != sess {
				t.Fatalf("last zxid %d, %d applied", st.LastZxid(), len(got))
			}
			if tc.txn.typ == jute.OpError && st.Tree().Digest() != before {
				t.Error("an error txn changed the tree")
			}
			if tc.check != nil {
				tc.check(t, st, got[len(got)-1])
			}
		})
	}
}

// everyChange makes every kind of tree change.
func everyChange() []step {
	return []step{
		op(jute.OpCreateSession, sessionTxn(4000)),
		op(jute.OpCreate, createTxn("/a", "x", false, 1)),
		op(jute.OpCreateContainer, containerTxn("/c", 2)),
		op(jute.OpCreateTTL, ttlTxn("/t", 3, 100)),
		op(jute.OpCreate, createTxn("/c/e", "", true, 1)),
		op(jute.OpSetData, setDataTxn("/a", "y", 1)),
		op(jute.OpSetACL, setACLTxn("/a", jute.ReadACLUnsafe, 1)),
		op(jute.OpMulti, multiTxn(sub{jute.OpCreate, createTxn("/a/b", "", false, 1)}, sub{jute.OpDelete, pathTxn("/t")})),
		op(jute.OpCloseSession, closeTxn("/c/e")),
		op(jute.OpDeleteContainer, pathTxn("/c")),
	}
}

// TestDigestFollowsTheTree checks the kept-up digest against one computed
// from scratch after every kind of change, and that a correct TxnDigest
// passes.
func TestDigestFollowsTheTree(t *testing.T) {
	st := newSynced(t, new([]Applied))
	feed(t, st, everyChange()...)
	want := newDigester(st.Tree(), st.auth.token).value.Load()
	if st.Digest() != want {
		t.Fatalf("kept digest %#x, from scratch %#x", st.Digest(), want)
	}
	// The next create's digest, computed on a copy fed the same txns.
	shadow := newSynced(t, new([]Applied))
	feed(t, shadow, everyChange()...)
	next := op(jute.OpCreate, createTxn("/z", "", false, 4))
	feed(t, shadow, next)
	next.digest = &zkimport.TxnDigest{Version: 2, Tree: shadow.Digest()}
	feed(t, st, next)
}
