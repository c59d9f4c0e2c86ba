package datatree

import (
	"bytes"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func mCreate(path string, flags jute.CreateMode) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCreate, Request: &jute.CreateRequest{Path: path, Data: []byte("d"), ACL: open, Flags: flags}}
}

func mOp(op jute.OpCode, path string) jute.MultiOp {
	return jute.MultiOp{Type: op, Request: &jute.CreateRequest{Path: path, ACL: open}}
}

func mDelete(path string, v int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpDelete, Request: &jute.DeleteRequest{Path: path, Version: v}}
}

func mSet(path, data string, v int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpSetData, Request: &jute.SetDataRequest{Path: path, Data: []byte(data), Version: v}}
}

func mCheck(path string, v int32) jute.MultiOp {
	return jute.MultiOp{Type: jute.OpCheck, Request: &jute.CheckVersionRequest{Path: path, Version: v}}
}

func multi(ops ...jute.MultiOp) *jute.MultiRequest { return &jute.MultiRequest{Ops: ops} }

// encodeResults is the wire form of the per-op results, the easiest exact
// comparison.
func encodeResults(r jute.Record) []byte { return jute.Encode(r) }

// TestMultiSuccess mirrors vectors/multi.txt's successful transaction.
func TestMultiSuccess(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreate("/v")
	h.mustCreate("/v/mu")
	res := h.apply(jute.OpMulti, multi(
		mCreate("/v/mu/a", 0), mSet("/v/mu", "x", -1), mCheck("/v/mu", 1), mDelete("/v/mu/a", -1)))
	z := h.zxid
	if res.Err != jute.OK {
		t.Fatalf("err %v", res.Err)
	}
	setStat := jute.Stat{Czxid: 2, Mzxid: z, Ctime: 2000, Mtime: z * 1000, Version: 1, Cversion: 1, DataLength: 1, NumChildren: 1, Pzxid: z}
	want := &jute.MultiResponse{Results: []jute.MultiResult{
		{Type: jute.OpCreate, Response: &jute.CreateResponse{Path: "/v/mu/a"}},
		{Type: jute.OpSetData, Response: &jute.StatResponse{Stat: setStat}},
		{Type: jute.OpCheck},
		{Type: jute.OpDelete},
	}}
	if !bytes.Equal(encodeResults(res.Response), encodeResults(want)) {
		t.Errorf("results %+v", res.Response.(*jute.MultiResponse).Results)
	}
	wantEv := []Event{
		ev(jute.EventNodeCreated, "/v/mu/a"), ev(jute.EventNodeChildrenChanged, "/v/mu"),
		ev(jute.EventNodeDataChanged, "/v/mu"),
		ev(jute.EventNodeDeleted, "/v/mu/a"), ev(jute.EventNodeChildrenChanged, "/v/mu"),
	}
	if !eventsEqual(res.Events, wantEv) {
		t.Errorf("events %v", res.Events)
	}
	if st := h.stat("/v/mu"); st.Cversion != 2 || st.Pzxid != z || st.Version != 1 || st.Mzxid != z {
		t.Errorf("final stat %+v", st)
	}
}

// TestMultiResultTypes: 3.8 reports create2 as type 1, container and TTL
// creates as type 15 with the stat at that point of the multi.
func TestMultiResultTypes(t *testing.T) {
	h := newHarness(t, Config{ExtendedTypesEnabled: true})
	ttl := jute.MultiOp{Type: jute.OpCreateTTL, Request: &jute.CreateTTLRequest{Path: "/t", ACL: open, Flags: 5, TTL: 100}}
	res := h.apply(jute.OpMulti, multi(mOp(jute.OpCreate2, "/c2"), mOp(jute.OpCreateContainer, "/cc"), ttl,
		mCreate("/cc/x", 0), mSet("/cc", "zz", 0)))
	if res.Err != jute.OK {
		t.Fatal(res.Err)
	}
	z := h.zxid
	st := jute.Stat{Czxid: z, Mzxid: z, Ctime: z * 1000, Mtime: z * 1000, Pzxid: z}
	want := &jute.MultiResponse{Results: []jute.MultiResult{
		{Type: jute.OpCreate, Response: &jute.CreateResponse{Path: "/c2"}},
		{Type: jute.OpCreate2, Response: &jute.Create2Response{Path: "/cc", Stat: st}},
		{Type: jute.OpCreate2, Response: &jute.Create2Response{Path: "/t", Stat: st}},
		{Type: jute.OpCreate, Response: &jute.CreateResponse{Path: "/cc/x"}},
		{Type: jute.OpSetData, Response: &jute.StatResponse{Stat: jute.Stat{Czxid: z, Mzxid: z, Ctime: z * 1000,
			Mtime: z * 1000, Version: 1, Cversion: 1, DataLength: 2, NumChildren: 1, Pzxid: z}}},
	}}
	if !bytes.Equal(encodeResults(res.Response), encodeResults(want)) {
		t.Errorf("results %+v", res.Response.(*jute.MultiResponse).Results)
	}
}

// TestMultiFailure mirrors vectors/multi.txt's failed transaction and checks
// that the rollback leaves state, stats and counters exactly as before.
func TestMultiFailure(t *testing.T) {
	tests := []struct {
		name   string
		ops    []jute.MultiOp
		failAt int
		code   jute.Code
	}{
		{"check fails", []jute.MultiOp{mCreate("/v/mu/b", 0), mCheck("/v/mu", 99), mSet("/v/mu", "x", -1)}, 1, jute.BadVersion},
		{"first op fails", []jute.MultiOp{mDelete("/none", -1), mCreate("/v/x", 0)}, 0, jute.NoNode},
		{"last op fails", []jute.MultiOp{mCreate("/v/a", 0), mCreate("/v/a/b", 0), mSet("/v/a", "y", 0), mDelete("/v/mu/k", -1), mCreate("/v/a", 0)}, 4, jute.NodeExists},
		{"delete then use", []jute.MultiOp{mDelete("/v/mu/k", -1), mSet("/v/mu/k", "z", -1)}, 1, jute.NoNode},
		{"ephemeral parent in multi", []jute.MultiOp{mCreate("/v/e", jute.ModeEphemeral), mCreate("/v/e/c", 0)}, 1, jute.NoChildrenForEphemerals},
		{"sequential then fail", []jute.MultiOp{mCreate("/v/s", 2), mCreate("/v/s", 2), mCheck("/v/s0000000004", 0), mCheck("/nope", 0)}, 3, jute.NoNode},
		{"delete ephemeral then fail", []jute.MultiOp{mDelete("/v/eph", -1), mCreate("/bad/", 0)}, 1, jute.NoNode},
		{"create under container then fail", []jute.MultiOp{mCreate("/v/cont/x", 0), mDelete("/v/cont/x", -1), mDelete("/v/cont", -1), mCheck("/v", 42)}, 3, jute.BadVersion},
		{"invalid ACL", []jute.MultiOp{mCreate("/v/z", 0), {Type: jute.OpCreate, Request: &jute.CreateRequest{Path: "/v/y"}}}, 1, jute.InvalidACL},
		{"new ACL list rolled back", []jute.MultiOp{{Type: jute.OpCreate, Request: &jute.CreateRequest{Path: "/v/z",
			ACL: []jute.ACL{aclEntry(31, "digest", "new:h")}}}, mCheck("/nope", 0)}, 1, jute.NoNode},
		{"TTL disabled", []jute.MultiOp{mCreate("/v/z", 0), {Type: jute.OpCreateTTL, Request: &jute.CreateTTLRequest{Path: "/v/t", ACL: open, Flags: 5, TTL: 1}}}, 1, jute.Unimplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.mustCreate("/v")
			h.mustCreate("/v/mu")
			h.mustCreate("/v/mu/k")
			h.apply(jute.OpCreateContainer, &jute.CreateRequest{Path: "/v/cont", ACL: open})
			h.create("/v/eph", nil, jute.ModeEphemeral)
			before := h.snapshot()
			stats := map[string]jute.Stat{}
			for _, p := range []string{"/", "/v", "/v/mu", "/v/mu/k", "/v/cont", "/v/eph"} {
				stats[p] = h.stat(p)
			}
			counts := [3]int64{int64(h.tree.NodeCount()), int64(h.tree.EphemeralCount()), h.tree.ApproximateDataSize()}
			descs := map[string]int64{}
			for p, n := range allNodes(h.tree) {
				descs[p], _ = subtreeSize(n)
			}
			aclLists := h.tree.acls.size()

			res := h.apply(jute.OpMulti, multi(tt.ops...))
			if res.Err != jute.OK {
				t.Fatalf("header err %v, want OK", res.Err)
			}
			if res.Events != nil {
				t.Errorf("events fired: %v", res.Events)
			}
			results := res.Response.(*jute.MultiResponse).Results
			if len(results) != len(tt.ops) {
				t.Fatalf("%d results", len(results))
			}
			for i, r := range results {
				want := jute.OK
				switch {
				case i == tt.failAt:
					want = tt.code
				case i > tt.failAt:
					want = jute.RuntimeInconsistency
				}
				if r.Type != jute.OpError || r.Err != want {
					t.Errorf("result %d = %+v, want error %v", i, r, want)
				}
			}
			if !bytes.Equal(h.snapshot(), before) {
				t.Error("rollback changed the snapshot")
			}
			for p, st := range stats {
				if got := h.stat(p); got != st {
					t.Errorf("%s stat %+v, want %+v", p, got, st)
				}
			}
			if got := [3]int64{int64(h.tree.NodeCount()), int64(h.tree.EphemeralCount()), h.tree.ApproximateDataSize()}; got != counts {
				t.Errorf("counters %v, want %v", got, counts)
			}
			for p, n := range allNodes(h.tree) {
				if got, _ := subtreeSize(n); got != descs[p] {
					t.Errorf("%s subtree %d, want %d", p, got, descs[p])
				}
			}
			if h.tree.acls.size() != aclLists {
				t.Errorf("ACL cache %d, want %d", h.tree.acls.size(), aclLists)
			}
			if len(h.tree.containers) != 1 || len(h.tree.ephemerals[h.sess]) != 1 {
				t.Errorf("indexes %v %v", h.tree.containers, h.tree.ephemerals)
			}
			// The counter did not move: the next sequential name is unchanged.
			r := h.create("/v/s", nil, jute.ModePersistentSequential)
			if createdPath(r.Response) != "/v/s0000000003" {
				t.Errorf("sequence after rollback: %q", createdPath(r.Response))
			}
		})
	}
}

// TestMultiFailureWireBytes compares with the failed multi in
// vectors/multi.txt: results 0 / -103 / -2.
func TestMultiFailureWireBytes(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreate("/v")
	h.mustCreate("/v/mu")
	res := h.apply(jute.OpMulti, multi(mCreate("/v/mu/b", 0), mCheck("/v/mu", 99), mSet("/v/mu", "x", -1)))
	want := "ffffffff000000000000000000" + "ffffffff00ffffff99ffffff99" + "ffffffff00fffffffefffffffe" + "ffffffff01ffffffff"
	if got := hexString(jute.Encode(res.Response)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestMultiSequentialConsecutive(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreate("/q")
	res := h.apply(jute.OpMulti, multi(mCreate("/q/n", 2), mCreate("/q/n", 2), mCreate("/q/n", 3)))
	rs := res.Response.(*jute.MultiResponse).Results
	for i, want := range []string{"/q/n0000000000", "/q/n0000000001", "/q/n0000000002"} {
		if got := createdPath(rs[i].Response); got != want {
			t.Errorf("op %d: %q, want %q", i, got, want)
		}
	}
}

func TestMultiEmptyAndInvalid(t *testing.T) {
	h := newHarness(t, Config{})
	before := h.snapshot()
	res := h.apply(jute.OpMulti, multi())
	if res.Err != jute.OK || len(res.Response.(*jute.MultiResponse).Results) != 0 || res.Events != nil {
		t.Errorf("empty multi: %+v", res)
	}
	if got := hexString(jute.Encode(res.Response)); got != "ffffffff01ffffffff" {
		t.Errorf("empty multi bytes %s", got)
	}
	read := jute.MultiOp{Type: jute.OpGetData, Request: &jute.PathWatchRequest{Path: "/"}}
	for _, ops := range [][]jute.MultiOp{
		{mCreate("/a", 0), read},
		{{Type: jute.OpGetChildren, Request: &jute.PathWatchRequest{Path: "/"}}},
		{{Type: jute.OpSetACL, Request: &jute.SetACLRequest{Path: "/", ACL: open, Version: -1}}},
		{{Type: jute.OpMulti, Request: multi()}},
		{{Type: jute.OpCreate, Request: &jute.DeleteRequest{Path: "/a"}}},
		{{Type: jute.OpDelete, Request: nil}},
	} {
		res := h.apply(jute.OpMulti, multi(ops...))
		if res.Err != jute.MarshallingError || res.Events != nil {
			t.Errorf("%v: err %v", ops, res.Err)
		}
		if mr, ok := res.Response.(*jute.MultiResponse); !ok || len(mr.Results) != 0 {
			t.Errorf("%v: response %+v", ops, res.Response)
		}
	}
	if !bytes.Equal(h.snapshot(), before) {
		t.Error("invalid multi changed the tree")
	}
}

func TestMultiCreateDeleteSamePath(t *testing.T) {
	h := newHarness(t, Config{})
	res := h.apply(jute.OpMulti, multi(mCreate("/a", 0), mCreate("/a/b", 0), mDelete("/a/b", 0), mDelete("/a", 0), mCreate("/a", 0)))
	if res.Err != jute.OK || res.Response.(*jute.MultiResponse).Results[4].Type != jute.OpCreate {
		t.Fatalf("%v %+v", res.Err, res.Response)
	}
	if len(res.Events) != 10 {
		t.Errorf("events %v", res.Events)
	}
	if n, _ := h.tree.GetAllChildrenNumber("/", nil); n != 4 {
		t.Errorf("descendants of / = %d", n)
	}
}
