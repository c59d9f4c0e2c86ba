package datatree

import (
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// applyAt applies a txn with the next zxid and an explicit time.
func (h *harness) applyAt(time int64, typ jute.OpCode, req jute.Record) *Result {
	h.zxid++
	txn := &Txn{Type: typ, SessionID: h.sess, Time: time, Request: req, IDs: h.ids}
	return h.tree.Apply(txn, h.zxid, nil)
}

func (h *harness) mustApplyAt(time int64, typ jute.OpCode, req jute.Record) {
	h.tb.Helper()
	if r := h.applyAt(time, typ, req); r.Err != jute.OK {
		h.tb.Fatalf("%v at %d: %v", typ, time, r.Err)
	}
}

func containerReq(path string) *jute.CreateRequest {
	return &jute.CreateRequest{Path: path, ACL: open, Flags: jute.ModeContainer}
}

func ttlReq(path string, ttl int64) *jute.CreateTTLRequest {
	return &jute.CreateTTLRequest{Path: path, ACL: open, Flags: jute.ModePersistentWithTTL, TTL: ttl}
}

func reapReq(path string) *jute.PathRequest { return &jute.PathRequest{Path: path} }

// The trees below are built at the times given (ms); "used" means a child
// was created and deleted again.
func TestReapCandidates(t *testing.T) {
	usedContainer := func(h *harness) {
		h.mustApplyAt(1000, jute.OpCreateContainer, containerReq("/c"))
		h.mustApplyAt(1100, jute.OpCreate, &jute.CreateRequest{Path: "/c/x", ACL: open})
		h.mustApplyAt(1200, jute.OpDelete, &jute.DeleteRequest{Path: "/c/x", Version: -1})
	}
	newContainer := func(h *harness) { h.mustApplyAt(1000, jute.OpCreateContainer, containerReq("/c")) }
	ttl500 := func(h *harness) { h.mustApplyAt(1000, jute.OpCreateTTL, ttlReq("/t", 500)) }
	tests := []struct {
		name         string
		setup        func(h *harness)
		now          int64
		maxNeverUsed int64
		limit        int
		want         []string
	}{
		{name: "never-used container is kept", setup: newContainer, now: 1 << 40},
		{name: "never-used container past maxNeverUsed", setup: newContainer, now: 6001, maxNeverUsed: 5000, want: []string{"/c"}},
		{name: "never-used container at maxNeverUsed", setup: newContainer, now: 6000, maxNeverUsed: 5000},
		{name: "used and empty container", setup: usedContainer, now: 1200, want: []string{"/c"}},
		{name: "container with a child", setup: func(h *harness) {
			newContainer(h)
			h.mustApplyAt(1100, jute.OpCreate, &jute.CreateRequest{Path: "/c/x", ACL: open})
		}, now: 1 << 40, maxNeverUsed: 1},
		{name: "ttl passed", setup: ttl500, now: 1501, want: []string{"/t"}},
		{name: "ttl not passed", setup: ttl500, now: 1500},
		{name: "ttl counts from the last setData", setup: func(h *harness) {
			ttl500(h)
			h.mustApplyAt(2000, jute.OpSetData, &jute.SetDataRequest{Path: "/t", Version: -1})
		}, now: 2400},
		{name: "ttl passed after setData", setup: func(h *harness) {
			ttl500(h)
			h.mustApplyAt(2000, jute.OpSetData, &jute.SetDataRequest{Path: "/t", Version: -1})
		}, now: 2501, want: []string{"/t"}},
		{name: "ttl node with a child", setup: func(h *harness) {
			ttl500(h)
			h.mustApplyAt(1100, jute.OpCreate, &jute.CreateRequest{Path: "/t/x", ACL: open})
		}, now: 1 << 40},
		{name: "persistent and ephemeral nodes", setup: func(h *harness) {
			h.mustApplyAt(1000, jute.OpCreate, &jute.CreateRequest{Path: "/p", ACL: open})
			h.mustApplyAt(1000, jute.OpCreate, &jute.CreateRequest{Path: "/e", ACL: open, Flags: jute.ModeEphemeral})
		}, now: 1 << 40, maxNeverUsed: 1},
		{name: "sorted and limited", setup: func(h *harness) {
			h.mustApplyAt(1000, jute.OpCreateTTL, ttlReq("/b", 1))
			h.mustApplyAt(1000, jute.OpCreateContainer, containerReq("/c"))
			h.mustApplyAt(1000, jute.OpCreateContainer, containerReq("/a"))
		}, now: 9000, maxNeverUsed: 1, limit: 2, want: []string{"/a", "/b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{ExtendedTypesEnabled: true})
			tc.setup(h)
			got := h.tree.ReapCandidates(tc.now, tc.maxNeverUsed, tc.limit)
			if !slices.Equal(got, tc.want) {
				t.Errorf("candidates = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReapRecheckAtApply: Apply decides with the txn's own time and the
// node's state then, whatever the reaper saw.
func TestReapRecheckAtApply(t *testing.T) {
	tests := []struct {
		name  string
		setup func(h *harness)
		path  string
		at    int64
		want  jute.Code
	}{
		{name: "container given a child since", setup: func(h *harness) {
			h.mustApplyAt(1000, jute.OpCreateContainer, containerReq("/c"))
			h.mustApplyAt(1100, jute.OpCreate, &jute.CreateRequest{Path: "/c/x", ACL: open})
		}, path: "/c", at: 5000, want: jute.NotEmpty},
		{name: "never-used container is trusted", setup: func(h *harness) {
			h.mustApplyAt(1000, jute.OpCreateContainer, containerReq("/c"))
		}, path: "/c", at: 1000, want: jute.OK},
		{name: "ttl modified since", setup: func(h *harness) {
			h.mustApplyAt(1000, jute.OpCreateTTL, ttlReq("/t", 500))
			h.mustApplyAt(3000, jute.OpSetData, &jute.SetDataRequest{Path: "/t", Version: -1})
		}, path: "/t", at: 3100, want: NotReapable},
		{name: "ttl not yet passed", setup: func(h *harness) {
			h.mustApplyAt(1000, jute.OpCreateTTL, ttlReq("/t", 500))
		}, path: "/t", at: 1500, want: NotReapable},
		{name: "ttl passed", setup: func(h *harness) {
			h.mustApplyAt(1000, jute.OpCreateTTL, ttlReq("/t", 500))
		}, path: "/t", at: 1501, want: jute.OK},
		{name: "ttl node given a child", setup: func(h *harness) {
			h.mustApplyAt(1000, jute.OpCreateTTL, ttlReq("/t", 500))
			h.mustApplyAt(1100, jute.OpCreate, &jute.CreateRequest{Path: "/t/x", ACL: open})
		}, path: "/t", at: 9000, want: jute.NotEmpty},
		{name: "persistent node", setup: func(h *harness) {
			h.mustApplyAt(1000, jute.OpCreate, &jute.CreateRequest{Path: "/p", ACL: open})
		}, path: "/p", at: 9000, want: NotReapable},
		{name: "normal ephemeral", setup: func(h *harness) {
			h.mustApplyAt(1000, jute.OpCreate, &jute.CreateRequest{Path: "/e", ACL: open, Flags: jute.ModeEphemeral})
		}, path: "/e", at: 9000, want: jute.BadVersion},
		{name: "gone", path: "/c", at: 9000, want: jute.NoNode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{ExtendedTypesEnabled: true})
			if tc.setup != nil {
				tc.setup(h)
			}
			before := h.snapshot()
			res := h.applyAt(tc.at, jute.OpDeleteContainer, reapReq(tc.path))
			if res.Err != tc.want {
				t.Fatalf("err = %v, want %v", res.Err, tc.want)
			}
			_, code := h.tree.Exists(tc.path, nil)
			if tc.want == jute.OK {
				if code != jute.NoNode {
					t.Errorf("%s still exists", tc.path)
				}
				return
			}
			if res.Events != nil || string(h.snapshot()) != string(before) {
				t.Errorf("refused reap changed the tree or fired %v", res.Events)
			}
		})
	}
}

// TestReapLikeDelete: a reap is an ordinary delete for the parent's stat,
// the indexes and the watch events.
func TestReapLikeDelete(t *testing.T) {
	h := newHarness(t, Config{ExtendedTypesEnabled: true})
	h.mustCreate("/p")
	h.mustApplyAt(1000, jute.OpCreateTTL, ttlReq("/p/t", 10))
	before := h.stat("/p")
	res := h.applyAt(5000, jute.OpDeleteContainer, reapReq("/p/t"))
	want := []Event{ev(jute.EventNodeDeleted, "/p/t"), ev(jute.EventNodeChildrenChanged, "/p")}
	if res.Err != jute.OK || !eventsEqual(res.Events, want) {
		t.Fatalf("reap: %v events %v", res.Err, res.Events)
	}
	after := h.stat("/p")
	if after.Pzxid != h.zxid || after.Cversion != before.Cversion+1 || after.NumChildren != 0 || after.Mzxid != before.Mzxid {
		t.Errorf("parent stat %+v after reap, before %+v", after, before)
	}
	if len(h.tree.ttls) != 0 {
		t.Errorf("ttl index not cleaned: %v", h.tree.ttls)
	}
}

// TestReapContainerChain: Curator-style parents (all containers) go one
// level per check once the leaf is deleted, as with ZooKeeper's
// ContainerManager.
func TestReapContainerChain(t *testing.T) {
	h := newHarness(t, Config{})
	for _, p := range []string{"/a", "/a/b", "/a/b/c"} {
		h.mustApplyAt(1000, jute.OpCreateContainer, containerReq(p))
	}
	h.mustApplyAt(1000, jute.OpCreate, &jute.CreateRequest{Path: "/a/b/c/leaf", ACL: open})
	if got := h.tree.ReapCandidates(2000, 0, 0); len(got) != 0 {
		t.Fatalf("candidates with the leaf present: %q", got)
	}
	h.mustApplyAt(2000, jute.OpDelete, &jute.DeleteRequest{Path: "/a/b/c/leaf", Version: -1})
	for _, level := range []string{"/a/b/c", "/a/b", "/a"} {
		got := h.tree.ReapCandidates(3000, 0, 0)
		if !slices.Equal(got, []string{level}) {
			t.Fatalf("candidates = %q, want [%s]", got, level)
		}
		h.mustApplyAt(3000, jute.OpDeleteContainer, reapReq(level))
	}
	if got := h.tree.ReapCandidates(3000, 0, 0); len(got) != 0 || len(h.tree.containers) != 0 {
		t.Errorf("left: candidates %q, containers %v", got, h.tree.containers)
	}
}
