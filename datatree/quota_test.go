package datatree

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func TestStatsTrackFormat(t *testing.T) {
	tests := []struct {
		in   string
		want string // re-encoded
	}{
		{"count=10,bytes=-1", "count=10,bytes=-1"},
		{"", "count=-1,bytes=-1"},
		// zkCli setquota -N 10 (3.7+): the '=' after bytes hides the rest
		// from pre-3.7 parsers.
		{"count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=10", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=10"},
		{"countHardLimit=3;bytes=7,,count=2", "count=2,bytes=7=;countHardLimit=3"},
		{"count=,bytes=5=", "count=-1,bytes=5"},
		{"count=x,bytes,=4,bytes=9", "count=-1,bytes=9=;=4"},
	}
	for _, tc := range tests {
		if got := string(parseStatsTrack([]byte(tc.in)).encode()); got != tc.want {
			t.Errorf("%q re-encoded as %q, want %q", tc.in, got, tc.want)
		}
	}
	st := parseStatsTrack([]byte("count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=10"))
	if st.get(quotaCountHardLimit) != 10 || st.get(quotaCount) != -1 || st.get("nothing") != -1 {
		t.Errorf("parsed %v", st)
	}
}

// setQuota creates the nodes zkCli setquota creates for root: the quota
// path's components, the limits node with limits and the stats node.
func (h *harness) setQuota(root, limits string) {
	h.tb.Helper()
	p := quotaPath
	for _, c := range strings.Split(root[1:], "/") {
		p += "/" + c
		if _, code := h.tree.Exists(p, nil); code == jute.NoNode {
			h.mustCreateData(p, nil)
		}
	}
	h.mustCreateData(p+"/"+quotaLimitsName, []byte(limits))
	h.mustCreateData(p+"/"+quotaStatsName, []byte("count=0,bytes=0"))
}

func (h *harness) mustCreateData(path string, data []byte) {
	h.tb.Helper()
	if r := h.create(path, data, jute.ModePersistent); r.Err != jute.OK {
		h.tb.Fatalf("create %s: %v", path, r.Err)
	}
}

func (h *harness) quotaStats(root string) string {
	h.tb.Helper()
	data, _, code := h.tree.GetData(quotaPath+root+"/"+quotaStatsName, nil, nil)
	if code != jute.OK {
		h.tb.Fatalf("stats of %s: %v", root, code)
	}
	return string(data)
}

// TestQuotaEnforcement: with EnforceQuota a write over a hard limit fails
// with QuotaExceeded after every other create check and before setData's
// version check; soft limits and unenforced hard limits only warn.
func TestQuotaEnforcement(t *testing.T) {
	create := func(p string, data string) *jute.CreateRequest {
		return &jute.CreateRequest{Path: p, Data: []byte(data), ACL: open}
	}
	set := func(p, data string, v int32) *jute.SetDataRequest {
		return &jute.SetDataRequest{Path: p, Data: []byte(data), Version: v}
	}
	// /q holds "1234" and has two children (count 3, bytes 4).
	quota := func(limits string) func(*harness) {
		return func(h *harness) {
			h.mustCreateData("/q", []byte("1234"))
			h.mustCreateData("/q/a", nil)
			h.mustCreateData("/q/b", nil)
			h.setQuota("/q", limits)
		}
	}
	countHard3 := quota("count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3")
	bytesHard10 := quota("count=-1,bytes=-1=;byteHardLimit=10;countHardLimit=-1")
	tests := []struct {
		name    string
		enforce bool
		setup   func(*harness)
		op      jute.OpCode
		req     jute.Record
		want    jute.Code
		warn    []QuotaWarning
	}{
		{name: "count hard limit", enforce: true, setup: countHard3, op: jute.OpCreate, req: create("/q/c", ""),
			want: jute.QuotaExceeded, warn: []QuotaWarning{{Root: "/q", Value: 4, Limit: 3, Hard: true}}},
		{name: "count hard limit on a deep node", enforce: true, setup: countHard3, op: jute.OpCreate, req: create("/q/a/x", ""),
			want: jute.QuotaExceeded, warn: []QuotaWarning{{Root: "/q", Value: 4, Limit: 3, Hard: true}}},
		{name: "NodeExists first", enforce: true, setup: countHard3, op: jute.OpCreate, req: create("/q/a", ""), want: jute.NodeExists},
		{name: "NoNode first", enforce: true, setup: countHard3, op: jute.OpCreate, req: create("/q/none/x", ""), want: jute.NoNode},
		{name: "not enforced", setup: countHard3, op: jute.OpCreate, req: create("/q/c", ""),
			want: jute.OK, warn: []QuotaWarning{{Root: "/q", Value: 4, Limit: 3, Hard: true}}},
		{name: "soft count limit", enforce: true, setup: quota("count=3,bytes=-1"), op: jute.OpCreate, req: create("/q/c", ""),
			want: jute.OK, warn: []QuotaWarning{{Root: "/q", Value: 4, Limit: 3}}},
		{name: "hard limit replaces soft", enforce: true, setup: quota("count=1,bytes=-1=;countHardLimit=4"), op: jute.OpCreate, req: create("/q/c", ""),
			want: jute.OK},
		{name: "outside the quota", enforce: true, setup: countHard3, op: jute.OpCreate, req: create("/qq", ""), want: jute.OK},
		{name: "bytes hard limit on create", enforce: true, setup: bytesHard10, op: jute.OpCreate, req: create("/q/c", "1234567"),
			want: jute.QuotaExceeded, warn: []QuotaWarning{{Root: "/q", Bytes: true, Value: 11, Limit: 10, Hard: true}}},
		{name: "bytes within limit", enforce: true, setup: bytesHard10, op: jute.OpCreate, req: create("/q/c", "123456"), want: jute.OK},
		{name: "bytes hard limit on setData", enforce: true, setup: bytesHard10, op: jute.OpSetData, req: set("/q/a", "1234567", -1),
			want: jute.QuotaExceeded, warn: []QuotaWarning{{Root: "/q", Bytes: true, Value: 11, Limit: 10, Hard: true}}},
		{name: "quota before BadVersion", enforce: true, setup: bytesHard10, op: jute.OpSetData, req: set("/q/a", "1234567", 7),
			want: jute.QuotaExceeded, warn: []QuotaWarning{{Root: "/q", Bytes: true, Value: 11, Limit: 10, Hard: true}}},
		{name: "shrinking is fine", enforce: true, setup: bytesHard10, op: jute.OpSetData, req: set("/q", "", -1), want: jute.OK},
		{name: "count limit ignores setData", enforce: true, setup: countHard3, op: jute.OpSetData, req: set("/q/a", "many bytes", -1), want: jute.OK},
		{name: "quota on the new node itself", enforce: true, setup: func(h *harness) {
			h.setQuota("/new", "count=-1,bytes=-1=;byteHardLimit=2")
		}, op: jute.OpCreate, req: create("/new", "abc"),
			want: jute.QuotaExceeded, warn: []QuotaWarning{{Root: "/new", Bytes: true, Value: 3, Limit: 2, Hard: true}}},
		{name: "multi rolls back on a quota failure", enforce: true, setup: countHard3, op: jute.OpMulti,
			req: &jute.MultiRequest{Ops: []jute.MultiOp{
				{Type: jute.OpDelete, Request: &jute.DeleteRequest{Path: "/q/b", Version: -1}},
				{Type: jute.OpCreate, Request: create("/q/c", "")},
				{Type: jute.OpCreate, Request: create("/q/d", "")},
			}},
			want: jute.OK, warn: []QuotaWarning{{Root: "/q", Value: 4, Limit: 3, Hard: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{EnforceQuota: tc.enforce})
			tc.setup(h)
			before := h.snapshot()
			total0, _ := h.tree.QuotaWarnings()
			res := h.apply(tc.op, tc.req)
			if res.Err != tc.want {
				t.Fatalf("err = %v, want %v", res.Err, tc.want)
			}
			if !warningsEqual(res.QuotaWarnings, tc.warn) {
				t.Errorf("warnings %+v, want %+v", res.QuotaWarnings, tc.warn)
			}
			total, last := h.tree.QuotaWarnings()
			if total != total0+uint64(len(tc.warn)) || (len(tc.warn) > 0 && last != tc.warn[len(tc.warn)-1]) {
				t.Errorf("counter %d last %+v after %d warnings", total, last, len(tc.warn))
			}
			failed := res.Err != jute.OK
			if m, ok := res.Response.(*jute.MultiResponse); ok {
				failed = m.Results[len(m.Results)-1].Type == jute.OpError
			}
			if failed && !bytes.Equal(h.snapshot(), before) {
				t.Errorf("failed write changed the tree")
			}
		})
	}
}

func warningsEqual(a, b []QuotaWarning) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestQuotaStatsAreNotWrites: the stats node changes data only, and the
// approximate data size stays the sum over all nodes.
func TestQuotaStatsAreNotWrites(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreateData("/q", []byte("x"))
	h.setQuota("/q", "count=5,bytes=-1")
	statsPath := quotaPath + "/q/" + quotaStatsName
	before := h.stat(statsPath)
	res := h.create("/q/child", []byte("123456789012345"), jute.ModePersistent)
	want := []Event{ev(jute.EventNodeCreated, "/q/child"), ev(jute.EventNodeChildrenChanged, "/q")}
	if !eventsEqual(res.Events, want) {
		t.Errorf("events %v, want %v", res.Events, want)
	}
	if got := h.quotaStats("/q"); got != "count=2,bytes=16" {
		t.Errorf("stats %q", got)
	}
	after := h.stat(statsPath)
	if after.Mzxid != before.Mzxid || after.Version != before.Version || after.Mtime != before.Mtime ||
		after.DataLength != int32(len("count=2,bytes=16")) {
		t.Errorf("stats node stat %+v, before %+v", after, before)
	}
	loaded, err := ReadSnapshot(bytes.NewReader(h.snapshot()), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.tree.ApproximateDataSize(), loaded.ApproximateDataSize(); got != want {
		t.Errorf("data size %d, recomputed from a snapshot %d", got, want)
	}
}

// TestQuotaSnapshotRoundTrip: a tree loaded from a snapshot keeps the quota
// state and goes on exactly like the original.
func TestQuotaSnapshotRoundTrip(t *testing.T) {
	cfg := Config{EnforceQuota: true}
	h := newHarness(t, cfg)
	h.mustCreateData("/q", []byte("abc"))
	h.setQuota("/q", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3")
	h.mustCreateData("/q/a", nil)
	loaded, err := ReadSnapshot(bytes.NewReader(h.snapshot()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tree := range []*Tree{h.tree, loaded} {
		n := h.zxid
		txn := func(p string) *Txn {
			return &Txn{Type: jute.OpCreate, Time: 1, Request: &jute.CreateRequest{Path: p, ACL: open}}
		}
		if r := tree.Apply(txn("/q/b"), n+1, nil); r.Err != jute.OK {
			t.Fatalf("third node: %v", r.Err)
		}
		if r := tree.Apply(txn("/q/c"), n+2, nil); r.Err != jute.QuotaExceeded {
			t.Fatalf("fourth node: %v, want QuotaExceeded", r.Err)
		}
	}
	var a, b bytes.Buffer
	if err := h.tree.WriteSnapshot(&a); err != nil {
		t.Fatal(err)
	}
	if err := loaded.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("original and loaded trees diverged")
	}
	if got := h.quotaStats("/q"); got != "count=3,bytes=3" {
		t.Errorf("stats %q", got)
	}
}

// TestNoQuotaFastPath: without quota nodes a write does not look at quotas.
func TestNoQuotaFastPath(t *testing.T) {
	h := newHarness(t, Config{EnforceQuota: true})
	h.mustCreate("/a")
	if root := h.tree.quotaRoot("/a"); root != "" {
		t.Errorf("quota root %q in a tree without quotas", root)
	}
	// The lowest of three counts: AllocsPerRun charges the whole process, and
	// a stray runtime allocation during one count is not quotaRoot's.
	allocs := testing.AllocsPerRun(100, func() { h.tree.quotaRoot("/a/b/c/d") })
	for range 2 {
		allocs = min(allocs, testing.AllocsPerRun(100, func() { h.tree.quotaRoot("/a/b/c/d") }))
	}
	if allocs != 0 {
		t.Errorf("quotaRoot allocates %v times", allocs)
	}
}

// TestRecomputeQuotaStats: every stats node is set to its subtree's usage
// (nested quotas' subtrees included, as ZooKeeper's load does), as data
// only (no version, mzxid or mtime of its own), with the digest kept
// exact; a quota without a stats node is left without one.
func TestRecomputeQuotaStats(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreateData("/app", []byte("12345"))
	h.mustCreateData("/app/sub", []byte("67"))
	h.setQuota("/app", "count=100,bytes=-1")
	h.setQuota("/app/sub", "count=10,bytes=-1")
	// Counted by /app/sub's stats only (the deepest quota), so /app's
	// stats miss it until a recount.
	h.mustCreateData("/app/sub/x", []byte("890"))
	h.mustCreateData("/gone", nil)
	h.setQuota("/gone", "count=1,bytes=-1")
	if r := h.apply(jute.OpDelete, &jute.DeleteRequest{Path: "/gone", Version: -1}); r.Err != jute.OK {
		t.Fatalf("delete /gone: %v", r.Err)
	}
	h.mustCreateData("/nostats", nil)
	h.mustCreateData(quotaPath+"/nostats", nil)
	h.mustCreateData(quotaPath+"/nostats/"+quotaLimitsName, []byte("count=1,bytes=-1"))
	// Clients overwrite stats: writes like any other.
	for _, w := range []struct{ root, data string }{{"/app/sub", "count=0,bytes=0=;extra=1"}, {"/gone", "count=5,bytes=5"}} {
		if r := h.apply(jute.OpSetData, &jute.SetDataRequest{Path: quotaPath + w.root + "/" + quotaStatsName,
			Data: []byte(w.data), Version: -1}); r.Err != jute.OK {
			t.Fatalf("setData: %v", r.Err)
		}
	}
	if got := h.quotaStats("/app"); got != "count=2,bytes=7" {
		t.Fatalf("before the recount /app's stats are %q", got)
	}
	before := map[string]jute.Stat{}
	for _, root := range []string{"/app", "/app/sub", "/gone"} {
		before[root] = h.stat(quotaPath + root + "/" + quotaStatsName)
	}

	changed := h.tree.RecomputeQuotaStats()
	wantChanged := []string{quotaPath + "/app/" + quotaStatsName, quotaPath + "/app/sub/" + quotaStatsName, quotaPath + "/gone/" + quotaStatsName}
	if !slices.Equal(changed, wantChanged) {
		t.Errorf("changed %q, want %q", changed, wantChanged)
	}
	for root, want := range map[string]string{"/app": "count=3,bytes=10", "/app/sub": "count=2,bytes=5", "/gone": "count=0,bytes=0"} {
		if got := h.quotaStats(root); got != want {
			t.Errorf("stats of %s = %q, want %q", root, got, want)
		}
		after := h.stat(quotaPath + root + "/" + quotaStatsName)
		b := before[root]
		if after.Version != b.Version || after.Mzxid != b.Mzxid || after.Mtime != b.Mtime {
			t.Errorf("stats node of %s: stat %+v, before %+v", root, after, b)
		}
	}
	if _, code := h.tree.Exists(quotaPath+"/nostats/"+quotaStatsName, nil); code != jute.NoNode {
		t.Errorf("a stats node was created for /nostats: %v", code)
	}
	checkDigest(t, h.tree, "after a recount")
	if again := h.tree.RecomputeQuotaStats(); again != nil {
		t.Errorf("a second recount changed %q", again)
	}
}

// TestLoaderRecountsQuotaStats: a tree built by a Loader (an import from
// ZooKeeper) gets its quota stats recounted, whatever the stored nodes
// said, and its digest stays exact.
func TestLoaderRecountsQuotaStats(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreateData("/app", []byte("12345"))
	h.setQuota("/app", "count=100,bytes=-1")
	h.mustCreateData("/app/a", []byte("678"))
	nodes := storedNodes(h.tree)
	statsPath := quotaPath + "/app/" + quotaStatsName
	for i := range nodes {
		if nodes[i].Path == statsPath {
			nodes[i].Data = []byte("count=0,bytes=0") // what an import found
		}
	}
	loaded, err := load(nodes, Config{})
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := loaded.GetData(statsPath, nil, nil)
	if string(data) != "count=2,bytes=8" {
		t.Errorf("loaded stats %q, want count=2,bytes=8", data)
	}
	checkDigest(t, loaded, "loaded")
	if loaded.Digest() != h.tree.Digest() {
		t.Errorf("loaded digest %#x, the original's %#x", loaded.Digest(), h.tree.Digest())
	}
}

// TestSnapshotKeepsQuotaStats: reading a zkserverd snapshot does not
// recount the stats, so a member that restores one has exactly the tree,
// and the digest, that the snapshot recorded, even where a recount would
// differ (a change under a nested quota counts only in the deepest one).
func TestSnapshotKeepsQuotaStats(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreateData("/app", nil)
	h.mustCreateData("/app/sub", nil)
	h.setQuota("/app", "count=100,bytes=-1")
	h.setQuota("/app/sub", "count=10,bytes=-1")
	h.mustCreateData("/app/sub/x", []byte("1"))
	loaded, err := ReadSnapshot(bytes.NewReader(h.snapshot()), Config{})
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := loaded.GetData(quotaPath+"/app/"+quotaStatsName, nil, nil)
	if string(data) != "count=2,bytes=0" {
		t.Errorf("loaded stats %q, want the snapshot's count=2,bytes=0", data)
	}
	if loaded.Digest() != h.tree.Digest() {
		t.Errorf("loaded digest %#x, recorded %#x", loaded.Digest(), h.tree.Digest())
	}
	if changed := loaded.RecomputeQuotaStats(); len(changed) != 1 {
		t.Errorf("a recount changed %q; the test needs a tree it changes", changed)
	}
}
