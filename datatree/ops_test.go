package datatree

import (
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// opCase is one write attempt against a prepared tree.
type opCase struct {
	name  string
	auth  bool
	setup func(h *harness)
	op    jute.OpCode
	req   jute.Record
	want  jute.Code
}

func runOpCases(t *testing.T, tests []opCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{}
			if tc.auth {
				cfg.Authorizer = testAuth{}
			}
			h := newHarness(t, cfg)
			if tc.setup != nil {
				tc.setup(h)
			}
			before := h.snapshot()
			forecast := h.tree.Forecast(&Txn{Type: tc.op, SessionID: h.sess, Request: tc.req, IDs: h.ids})
			if want := forecastOf(tc.op, tc.want); forecast != want {
				t.Errorf("Forecast = %v, want %v", forecast, want)
			}
			res := h.apply(tc.op, tc.req)
			if res.Err != tc.want {
				t.Fatalf("err = %v, want %v", res.Err, tc.want)
			}
			if tc.want != jute.OK {
				if res.Response != nil || res.Events != nil {
					t.Errorf("failed op returned %v, events %v", res.Response, res.Events)
				}
				if string(h.snapshot()) != string(before) {
					t.Errorf("failed op changed the tree")
				}
			}
		})
	}
}

// forecastOf is what Tree.Forecast answers for a write of op that Apply
// answers with code: the code itself for creates and setData, except a
// quota failure (it depends on other nodes), and OK for everything else.
func forecastOf(op jute.OpCode, code jute.Code) jute.Code {
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpSetData:
		if code != jute.QuotaExceeded {
			return code
		}
	}
	return jute.OK
}

// aclWithout returns world:anyone with every permission but perm.
func aclWithout(perm int32) []jute.ACL {
	return []jute.ACL{{Perms: jute.PermAll &^ perm, ID: jute.ID{Scheme: "world", ID: "anyone"}}}
}

// lockNode creates path (and /p/c under it when child is set), then sets
// the node's ACL to acl.
func lockNode(path string, acl []jute.ACL, children ...string) func(*harness) {
	return func(h *harness) {
		h.mustCreate(path)
		for _, c := range children {
			h.mustCreate(c)
		}
		if r := h.apply(jute.OpSetACL, &jute.SetACLRequest{Path: path, ACL: acl, Version: -1}); r.Err != jute.OK {
			h.tb.Fatalf("setACL: %v", r.Err)
		}
	}
}

func TestDeletePrecedence(t *testing.T) {
	del := func(p string, v int32) *jute.DeleteRequest { return &jute.DeleteRequest{Path: p, Version: v} }
	withChild := setupNodes("/p", "/p/c")
	runOpCases(t, []opCase{
		{name: "root", op: jute.OpDelete, req: del("/", -1), want: jute.BadArguments},
		{name: "/zookeeper", op: jute.OpDelete, req: del("/zookeeper", -1), want: jute.BadArguments},
		{name: "/zookeeper/quota", op: jute.OpDelete, req: del("/zookeeper/quota", -1), want: jute.BadArguments},
		{name: "/zookeeper/config", op: jute.OpDelete, req: del("/zookeeper/config", -1), want: jute.BadArguments},
		{name: "no slash", op: jute.OpDelete, req: del("noslash", -1), want: jute.BadArguments},
		{name: "empty", op: jute.OpDelete, req: del("", -1), want: jute.BadArguments},
		{name: "NUL", op: jute.OpDelete, req: del("/missing/a\x00", -1), want: jute.BadArguments},
		{name: "missing parent", op: jute.OpDelete, req: del("/missing/a", -1), want: jute.NoNode},
		{name: "no DELETE on parent, node missing", auth: true, setup: lockNode("/p", aclWithout(jute.PermDelete)),
			op: jute.OpDelete, req: del("/p/none", -1), want: jute.NoAuth},
		{name: "no DELETE on parent", auth: true, setup: lockNode("/p", aclWithout(jute.PermDelete), "/p/c"),
			op: jute.OpDelete, req: del("/p/c", -1), want: jute.NoAuth},
		{name: "no DELETE on the node itself is fine", auth: true, setup: lockNode("/p", aclWithout(jute.PermDelete)),
			op: jute.OpDelete, req: del("/p", -1), want: jute.OK},
		{name: "missing node", op: jute.OpDelete, req: del("/none", -1), want: jute.NoNode},
		{name: "trailing slash", setup: setupNodes("/a"), op: jute.OpDelete, req: del("/a/", -1), want: jute.NoNode},
		{name: "relative", op: jute.OpDelete, req: del("m/bad", -1), want: jute.NoNode},
		{name: "bad version", setup: setupNodes("/a"), op: jute.OpDelete, req: del("/a", 3), want: jute.BadVersion},
		{name: "BadVersion before NotEmpty", setup: withChild, op: jute.OpDelete, req: del("/p", 3), want: jute.BadVersion},
		{name: "not empty", setup: withChild, op: jute.OpDelete, req: del("/p", -1), want: jute.NotEmpty},
		{name: "not empty, right version", setup: withChild, op: jute.OpDelete, req: del("/p", 0), want: jute.NotEmpty},
		{name: "ok", setup: withChild, op: jute.OpDelete, req: del("/p/c", 0), want: jute.OK},
		{name: "other session's ephemeral", setup: func(h *harness) {
			h.sess = 7
			h.create("/e", nil, jute.ModeEphemeral)
			h.sess = 8
		}, op: jute.OpDelete, req: del("/e", -1), want: jute.OK},
	})
}

func TestSetDataPrecedence(t *testing.T) {
	set := func(p string, v int32) *jute.SetDataRequest {
		return &jute.SetDataRequest{Path: p, Data: []byte("x"), Version: v}
	}
	runOpCases(t, []opCase{
		{name: "invalid path", op: jute.OpSetData, req: set("/a/", -1), want: jute.BadArguments},
		{name: "invalid path, missing", op: jute.OpSetData, req: set("", -1), want: jute.BadArguments},
		{name: "relative", op: jute.OpSetData, req: set("a", -1), want: jute.BadArguments},
		{name: "missing", op: jute.OpSetData, req: set("/none", -1), want: jute.NoNode},
		{name: "no WRITE", auth: true, setup: lockNode("/a", aclWithout(jute.PermWrite)), op: jute.OpSetData, req: set("/a", -1), want: jute.NoAuth},
		{name: "NoAuth before BadVersion", auth: true, setup: lockNode("/a", aclWithout(jute.PermWrite)), op: jute.OpSetData, req: set("/a", 9), want: jute.NoAuth},
		{name: "config node is read-only", auth: true, op: jute.OpSetData, req: set("/zookeeper/config", -1), want: jute.NoAuth},
		{name: "bad version", setup: setupNodes("/a"), op: jute.OpSetData, req: set("/a", 1), want: jute.BadVersion},
		{name: "ok", setup: setupNodes("/a"), op: jute.OpSetData, req: set("/a", 0), want: jute.OK},
		{name: "root", op: jute.OpSetData, req: set("/", -1), want: jute.OK},
		{name: "/zookeeper", op: jute.OpSetData, req: set("/zookeeper", -1), want: jute.OK},
	})
}

func TestSetACLPrecedence(t *testing.T) {
	setACL := func(p string, acl []jute.ACL, v int32) *jute.SetACLRequest {
		return &jute.SetACLRequest{Path: p, ACL: acl, Version: v}
	}
	runOpCases(t, []opCase{
		{name: "invalid path", op: jute.OpSetACL, req: setACL("/a/", nil, -1), want: jute.BadArguments},
		{name: "InvalidACL before NoNode", op: jute.OpSetACL, req: setACL("/none", nil, -1), want: jute.InvalidACL},
		{name: "InvalidACL before NoAuth", auth: true, setup: lockNode("/a", aclWithout(jute.PermAdmin)),
			op: jute.OpSetACL, req: setACL("/a", []jute.ACL{aclEntry(31, "digest", "x")}, -1), want: jute.InvalidACL},
		{name: "missing", op: jute.OpSetACL, req: setACL("/none", open, -1), want: jute.NoNode},
		{name: "no ADMIN", auth: true, setup: lockNode("/a", aclWithout(jute.PermAdmin)), op: jute.OpSetACL, req: setACL("/a", open, -1), want: jute.NoAuth},
		{name: "NoAuth before BadVersion", auth: true, setup: lockNode("/a", aclWithout(jute.PermAdmin)), op: jute.OpSetACL, req: setACL("/a", open, 5), want: jute.NoAuth},
		{name: "version compares aversion", setup: setupNodes("/a"), op: jute.OpSetACL, req: setACL("/a", open, 1), want: jute.BadVersion},
		{name: "ok", setup: setupNodes("/a"), op: jute.OpSetACL, req: setACL("/a", open, 0), want: jute.OK},
	})
}

func TestCheckPrecedence(t *testing.T) {
	check := func(p string, v int32) *jute.CheckVersionRequest {
		return &jute.CheckVersionRequest{Path: p, Version: v}
	}
	runOpCases(t, []opCase{
		{name: "invalid path", op: jute.OpCheck, req: check("/a/", 0), want: jute.BadArguments},
		{name: "missing", op: jute.OpCheck, req: check("/none", 0), want: jute.NoNode},
		{name: "no READ", auth: true, setup: lockNode("/a", aclWithout(jute.PermRead)), op: jute.OpCheck, req: check("/a", 0), want: jute.NoAuth},
		{name: "NoAuth before BadVersion", auth: true, setup: lockNode("/a", aclWithout(jute.PermRead)), op: jute.OpCheck, req: check("/a", 4), want: jute.NoAuth},
		{name: "bad version", setup: setupNodes("/a"), op: jute.OpCheck, req: check("/a", 4), want: jute.BadVersion},
		{name: "ok", setup: setupNodes("/a"), op: jute.OpCheck, req: check("/a", 0), want: jute.OK},
		{name: "any version", setup: setupNodes("/a"), op: jute.OpCheck, req: check("/a", -1), want: jute.OK},
	})
}

func TestDeleteContainer(t *testing.T) {
	path := func(p string) *jute.PathRequest { return &jute.PathRequest{Path: p} }
	container := func(h *harness) {
		h.apply(jute.OpCreateContainer, &jute.CreateRequest{Path: "/c", ACL: open})
	}
	runOpCases(t, []opCase{
		{name: "system node", op: jute.OpDeleteContainer, req: path("/zookeeper"), want: jute.BadArguments},
		{name: "no slash", op: jute.OpDeleteContainer, req: path("c"), want: jute.BadArguments},
		{name: "missing", op: jute.OpDeleteContainer, req: path("/c"), want: jute.NoNode},
		{name: "with children", setup: func(h *harness) { container(h); h.mustCreate("/c/x") },
			op: jute.OpDeleteContainer, req: path("/c"), want: jute.NotEmpty},
		{name: "normal ephemeral", setup: func(h *harness) { h.create("/c", nil, jute.ModeEphemeral) },
			op: jute.OpDeleteContainer, req: path("/c"), want: jute.BadVersion},
		{name: "ok", setup: container, op: jute.OpDeleteContainer, req: path("/c"), want: jute.OK},
	})
	h := newHarness(t, Config{})
	container(h)
	res := h.apply(jute.OpDeleteContainer, path("/c"))
	want := []Event{ev(jute.EventNodeDeleted, "/c"), ev(jute.EventNodeChildrenChanged, "/")}
	if res.Err != jute.OK || !eventsEqual(res.Events, want) {
		t.Fatalf("res %v events %v", res.Err, res.Events)
	}
	if len(h.tree.containers) != 0 {
		t.Errorf("container index not cleaned: %v", h.tree.containers)
	}
}

func TestMismatchedRequestIsMarshallingError(t *testing.T) {
	tests := []struct {
		op  jute.OpCode
		req jute.Record
	}{
		{jute.OpCreate, &jute.DeleteRequest{Path: "/a"}},
		{jute.OpCreateTTL, &jute.CreateRequest{Path: "/a"}},
		{jute.OpDelete, nil},
		{jute.OpSetData, &jute.SetACLRequest{}},
		{jute.OpMulti, &jute.CreateRequest{}},
		{jute.OpGetData, &jute.PathWatchRequest{Path: "/"}},
	}
	for _, tt := range tests {
		h := newHarness(t, Config{})
		res := h.apply(tt.op, tt.req)
		if res.Err != jute.MarshallingError {
			t.Errorf("%v with %T: err %v", tt.op, tt.req, res.Err)
		}
	}
	if res := New(Config{}).Apply(nil, 1, nil); res.Err != jute.MarshallingError {
		t.Errorf("nil txn: %v", res.Err)
	}
}

func TestSessionAndReconfigTxns(t *testing.T) {
	h := newHarness(t, Config{})
	before := h.snapshot()
	if res := h.apply(jute.OpCreateSession, nil); res.Err != jute.OK || res.Response != nil || res.Events != nil {
		t.Errorf("createSession: %+v", res)
	}
	if res := h.apply(jute.OpCloseSession, nil); res.Err != jute.OK || res.Events != nil {
		t.Errorf("closeSession without ephemerals: %+v", res)
	}
	if res := h.apply(jute.OpReconfig, &jute.ReconfigRequest{}); res.Err != jute.ReconfigDisabled {
		t.Errorf("reconfig: %v", res.Err)
	}
	if string(h.snapshot()) != string(before) {
		t.Error("session txns changed the tree")
	}
}

// TestSystemNodes checks the fresh tree's system nodes against ZooKeeper
// 3.8's.
func TestSystemNodes(t *testing.T) {
	tree := New(Config{})
	tests := []struct {
		path     string
		stat     jute.Stat
		acl      []jute.ACL
		children []string
	}{
		{"/", jute.Stat{Cversion: -1, NumChildren: 1}, open, []string{"zookeeper"}},
		{"/zookeeper", jute.Stat{Cversion: -2, NumChildren: 2}, open, []string{"config", "quota"}},
		{"/zookeeper/quota", jute.Stat{}, open, nil},
		{"/zookeeper/config", jute.Stat{Aversion: -1}, jute.ReadACLUnsafe, nil},
	}
	for _, tt := range tests {
		data, st, code := tree.GetData(tt.path, nil, nil)
		if code != jute.OK || st != tt.stat || data == nil || len(data) != 0 {
			t.Errorf("%s: data %v stat %+v code %v", tt.path, data, st, code)
		}
		acl, _, _ := tree.GetACL(tt.path, nil)
		if !slices.Equal(acl, tt.acl) {
			t.Errorf("%s: acl %v", tt.path, acl)
		}
		kids, _, _ := tree.GetChildren(tt.path, nil, nil)
		slices.Sort(kids)
		if !slices.Equal(kids, tt.children) {
			t.Errorf("%s: children %v", tt.path, kids)
		}
	}
	if tree.NodeCount() != 4 || tree.EphemeralCount() != 0 || tree.ApproximateDataSize() != 44 {
		t.Errorf("counts %d %d %d", tree.NodeCount(), tree.EphemeralCount(), tree.ApproximateDataSize())
	}
	if n, _ := tree.GetAllChildrenNumber("/", nil); n != 3 {
		t.Errorf("GetAllChildrenNumber(/) = %d", n)
	}
}

func TestSetConfigNode(t *testing.T) {
	tree := New(Config{})
	text := []byte("server.1=127.0.0.1:20201:20301:participant\nversion=0")
	tree.SetConfigNode(text, 0, 1700000000000)
	data, st, _ := tree.GetData("/zookeeper/config", nil, nil)
	want := jute.Stat{Mtime: 1700000000000, Version: -1, Aversion: -1, DataLength: int32(len(text))}
	if string(data) != string(text) || st != want {
		t.Errorf("stat %+v", st)
	}
	if got := tree.ApproximateDataSize(); got != 44+int64(len(text)) {
		t.Errorf("data size %d", got)
	}
}

// TestStatBookkeeping follows ZooKeeper's stat bookkeeping (zxids, times,
// versions, pzxid) through a sequence of writes.
func TestStatBookkeeping(t *testing.T) {
	h := newHarness(t, Config{})
	h.create("/p", nil, 0) // zxid 1: null data
	if st := h.stat("/"); st.Cversion != 0 || st.NumChildren != 2 || st.Pzxid != 1 {
		t.Errorf("root after create: %+v", st)
	}
	h.create("/p/a", []byte{}, 0) // 2: empty data
	h.create("/p/b", []byte("xyz"), 0)
	want := jute.Stat{Czxid: 1, Mzxid: 1, Ctime: 1000, Mtime: 1000, Cversion: 2, NumChildren: 2, Pzxid: 3}
	if st := h.stat("/p"); st != want {
		t.Errorf("/p after 2 creates: %+v", st)
	}
	h.apply(jute.OpDelete, &jute.DeleteRequest{Path: "/p/a", Version: -1}) // 4
	want.Cversion, want.NumChildren, want.Pzxid = 3, 1, 4
	if st := h.stat("/p"); st != want {
		t.Errorf("/p after delete: %+v", st)
	}
	if h.tree.lookup("/p").cversion != 2 {
		t.Errorf("stored cversion changed by delete: %d", h.tree.lookup("/p").cversion)
	}
	res := h.apply(jute.OpSetData, &jute.SetDataRequest{Path: "/p/b", Data: []byte("hello"), Version: 0}) // 5
	wantB := jute.Stat{Czxid: 3, Mzxid: 5, Ctime: 3000, Mtime: 5000, Version: 1, DataLength: 5, Pzxid: 3}
	if st := res.Response.(*jute.StatResponse).Stat; st != wantB {
		t.Errorf("setData stat %+v", st)
	}
	if st := h.stat("/p"); st != want {
		t.Errorf("parent changed by child setData: %+v", st)
	}
	res = h.apply(jute.OpSetACL, &jute.SetACLRequest{Path: "/p/b", ACL: jute.ReadACLUnsafe, Version: 0}) // 6
	wantB.Aversion = 1
	if st := res.Response.(*jute.StatResponse).Stat; st != wantB || res.Events != nil {
		t.Errorf("setACL stat %+v events %v", st, res.Events)
	}
	h.create("/p/c", nil, 0) // 7
	h.apply(jute.OpDelete, &jute.DeleteRequest{Path: "/p/c", Version: -1})
	h.apply(jute.OpDelete, &jute.DeleteRequest{Path: "/p/b", Version: -1}) // 9
	want = jute.Stat{Czxid: 1, Mzxid: 1, Ctime: 1000, Mtime: 1000, Cversion: 6, Pzxid: 9}
	if st := h.stat("/p"); st != want {
		t.Errorf("/p after 3 creates and 3 deletes: %+v", st)
	}
	// Null data stays null, empty stays empty.
	h.create("/n", nil, 0)
	h.create("/e", []byte{}, 0)
	if d, st, _ := h.tree.GetData("/n", nil, nil); d != nil || st.DataLength != 0 {
		t.Errorf("null data: %v %d", d, st.DataLength)
	}
	if d, _, _ := h.tree.GetData("/e", nil, nil); d == nil || len(d) != 0 {
		t.Errorf("empty data: %v", d)
	}
	h.apply(jute.OpSetData, &jute.SetDataRequest{Path: "/e", Data: nil, Version: -1})
	if d, _, _ := h.tree.GetData("/e", nil, nil); d != nil {
		t.Errorf("setData null: %v", d)
	}
	// A failed write leaves every stat alone.
	before := h.snapshot()
	h.apply(jute.OpSetData, &jute.SetDataRequest{Path: "/e", Data: nil, Version: 7})
	if string(h.snapshot()) != string(before) {
		t.Errorf("failed setData changed state")
	}
}

func TestVersionWraps(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreate("/a")
	h.tree.lookup("/a").version = 1<<31 - 1
	res := h.apply(jute.OpSetData, &jute.SetDataRequest{Path: "/a", Version: 1<<31 - 1})
	if res.Err != jute.OK || res.Response.(*jute.StatResponse).Stat.Version != -1<<31 {
		t.Fatalf("wrap: %v %+v", res.Err, res.Response)
	}
	// -2^31 can be matched exactly; -1 always matches.
	if res := h.apply(jute.OpCheck, &jute.CheckVersionRequest{Path: "/a", Version: -1 << 31}); res.Err != jute.OK {
		t.Fatalf("check: %v", res.Err)
	}
}

func TestEventsPerWrite(t *testing.T) {
	h := newHarness(t, Config{})
	tests := []struct {
		op   jute.OpCode
		req  jute.Record
		want []Event
	}{
		{jute.OpCreate, &jute.CreateRequest{Path: "/a", ACL: open}, []Event{ev(jute.EventNodeCreated, "/a"), ev(jute.EventNodeChildrenChanged, "/")}},
		{jute.OpCreate, &jute.CreateRequest{Path: "/a/b", ACL: open}, []Event{ev(jute.EventNodeCreated, "/a/b"), ev(jute.EventNodeChildrenChanged, "/a")}},
		{jute.OpSetData, &jute.SetDataRequest{Path: "/a/b", Version: -1}, []Event{ev(jute.EventNodeDataChanged, "/a/b")}},
		{jute.OpSetACL, &jute.SetACLRequest{Path: "/a/b", ACL: open, Version: -1}, nil},
		{jute.OpCheck, &jute.CheckVersionRequest{Path: "/a/b", Version: -1}, nil},
		{jute.OpDelete, &jute.DeleteRequest{Path: "/a/b", Version: -1}, []Event{ev(jute.EventNodeDeleted, "/a/b"), ev(jute.EventNodeChildrenChanged, "/a")}},
		{jute.OpDelete, &jute.DeleteRequest{Path: "/a/b", Version: -1}, nil},
		{jute.OpDelete, &jute.DeleteRequest{Path: "/a", Version: -1}, []Event{ev(jute.EventNodeDeleted, "/a"), ev(jute.EventNodeChildrenChanged, "/")}},
	}
	for i, tt := range tests {
		res := h.apply(tt.op, tt.req)
		if !eventsEqual(res.Events, tt.want) {
			t.Errorf("step %d %v: events %v, want %v", i, tt.op, res.Events, tt.want)
		}
	}
}

func TestHookRunsUnderLock(t *testing.T) {
	tree := New(Config{})
	txn := &Txn{Type: jute.OpCreate, Time: 5, Request: &jute.CreateRequest{Path: "/a", ACL: open}}
	called := false
	res := tree.Apply(txn, 1, func(got *Txn, r *Result) {
		called = true
		if got != txn || r.Err != jute.OK || len(r.Events) != 2 {
			t.Errorf("hook got %v %+v", got, r)
		}
		if tree.mu.TryRLock() {
			tree.mu.RUnlock()
			t.Error("hook ran without the write lock")
		}
	})
	if !called || res.Err != jute.OK {
		t.Fatal("hook not called")
	}
	// Failed txns reach the hook too.
	called = false
	tree.Apply(txn, 2, func(_ *Txn, r *Result) { called = r.Err == jute.NodeExists })
	if !called {
		t.Error("hook not called for a failed txn")
	}
}

func TestCloseSession(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreate("/p")
	h.mustCreate("/q")
	h.sess = 1
	for _, p := range []string{"/q/e2", "/p/e1", "/p/e0", "/top"} {
		if r := h.create(p, nil, jute.ModeEphemeral); r.Err != jute.OK {
			t.Fatal(r.Err)
		}
	}
	h.sess = 2
	h.create("/p/other", nil, jute.ModeEphemeral)
	if got := h.tree.SessionEphemerals(1); !slices.Equal(got, []string{"/p/e0", "/p/e1", "/q/e2", "/top"}) {
		t.Fatalf("SessionEphemerals = %v", got)
	}
	if h.tree.EphemeralCount() != 5 {
		t.Fatalf("EphemeralCount = %d", h.tree.EphemeralCount())
	}
	h.sess = 1
	res := h.apply(jute.OpCloseSession, nil)
	want := []Event{
		ev(jute.EventNodeDeleted, "/p/e0"), ev(jute.EventNodeChildrenChanged, "/p"),
		ev(jute.EventNodeDeleted, "/p/e1"), ev(jute.EventNodeChildrenChanged, "/p"),
		ev(jute.EventNodeDeleted, "/q/e2"), ev(jute.EventNodeChildrenChanged, "/q"),
		ev(jute.EventNodeDeleted, "/top"), ev(jute.EventNodeChildrenChanged, "/"),
	}
	if res.Err != jute.OK || !eventsEqual(res.Events, want) {
		t.Fatalf("closeSession: %v %v", res.Err, res.Events)
	}
	closeZxid := h.zxid
	for _, p := range []string{"/p", "/q", "/"} {
		if st := h.stat(p); st.Pzxid != closeZxid {
			t.Errorf("%s pzxid %d, want %d", p, st.Pzxid, closeZxid)
		}
	}
	if got := h.tree.SessionEphemerals(1); len(got) != 0 {
		t.Errorf("left %v", got)
	}
	if got := h.tree.SessionEphemerals(2); !slices.Equal(got, []string{"/p/other"}) {
		t.Errorf("other session lost %v", got)
	}
	if h.tree.EphemeralCount() != 1 {
		t.Errorf("EphemeralCount = %d", h.tree.EphemeralCount())
	}
	// Deleting an ephemeral by hand removes it from the session index.
	h.apply(jute.OpDelete, &jute.DeleteRequest{Path: "/p/other", Version: -1})
	if got := h.tree.SessionEphemerals(2); len(got) != 0 || len(h.tree.ephemerals) != 0 {
		t.Errorf("index after delete: %v %v", got, h.tree.ephemerals)
	}
}

func TestReads(t *testing.T) {
	h := newHarness(t, Config{Authorizer: testAuth{}})
	h.createACL("/a", open)
	h.createACL("/a/b", open)
	h.createACL("/a/b/c", open)
	h.createACL("/secret", []jute.ACL{{Perms: jute.PermRead, ID: alice}, {Perms: jute.PermAdmin, ID: bob}, aclEntry(jute.PermWrite, "world", "anyone")})
	h.sess = 9
	h.create("/v", nil, 0)
	for _, p := range []string{"/v/raw", "/v/tmp"} {
		h.create(p, nil, 0)
	}
	h.apply(jute.OpDelete, &jute.DeleteRequest{Path: "/v/tmp", Version: -1})
	h.apply(jute.OpDelete, &jute.DeleteRequest{Path: "/v/raw", Version: -1})
	h.create("/v/raw", nil, jute.ModeEphemeral)
	h.create("/v/rawx", nil, jute.ModeEphemeral)
	h.create("/w", nil, jute.ModeEphemeral)

	t.Run("exists", func(t *testing.T) {
		var seen []bool
		watch := func(e bool) { seen = append(seen, e) }
		if _, code := h.tree.Exists("/a", watch); code != jute.OK {
			t.Error(code)
		}
		if _, code := h.tree.Exists("/none", watch); code != jute.NoNode {
			t.Error(code)
		}
		if _, code := h.tree.Exists("bad", watch); code != jute.NoNode {
			t.Error(code)
		}
		if _, code := h.tree.Exists("/a\x00", watch); code != jute.BadArguments {
			t.Error(code)
		}
		if _, code := h.tree.Exists("/secret", nil); code != jute.OK {
			t.Errorf("exists checked ACL: %v", code)
		}
		if st, code := h.tree.Exists("", nil); code != jute.OK || st.NumChildren != 5 {
			t.Errorf("exists \"\": %v %+v", code, st)
		}
		if !slices.Equal(seen, []bool{true, false, false}) {
			t.Errorf("watch calls %v", seen)
		}
	})
	t.Run("getData", func(t *testing.T) {
		calls := 0
		watch := func(e bool) {
			calls++
			if !e {
				t.Error("watch(false)")
			}
		}
		if _, _, code := h.tree.GetData("/none", nil, watch); code != jute.NoNode {
			t.Error(code)
		}
		if _, _, code := h.tree.GetData("/secret", nil, watch); code != jute.NoAuth {
			t.Error(code)
		}
		if calls != 0 {
			t.Errorf("watch set on a failed read")
		}
		if _, _, code := h.tree.GetData("/secret", []jute.ID{alice}, watch); code != jute.OK {
			t.Error(code)
		}
		if _, st, code := h.tree.GetData("", nil, watch); code != jute.OK || st.NumChildren != 5 {
			t.Errorf("root alias: %v", code)
		}
		if calls != 2 {
			t.Errorf("watch calls %d", calls)
		}
	})
	t.Run("getChildren", func(t *testing.T) {
		kids, st, code := h.tree.GetChildren("/v", nil, nil)
		slices.Sort(kids)
		if code != jute.OK || !slices.Equal(kids, []string{"raw", "rawx"}) || st.NumChildren != 2 || st.Cversion != 6 {
			t.Errorf("children %v %+v %v", kids, st, code)
		}
		if _, _, code := h.tree.GetChildren("/secret", []jute.ID{bob}, nil); code != jute.NoAuth {
			t.Error(code)
		}
		if _, _, code := h.tree.GetChildren("/none", nil, nil); code != jute.NoNode {
			t.Error(code)
		}
	})
	t.Run("getACL", func(t *testing.T) {
		if _, _, code := h.tree.GetACL("/secret", nil); code != jute.NoAuth {
			t.Errorf("no READ or ADMIN: %v", code)
		}
		got, st, code := h.tree.GetACL("/secret", []jute.ID{alice})
		want := []jute.ACL{aclEntry(jute.PermRead, "digest", "alice:x"), aclEntry(jute.PermAdmin, "digest", "bob:x"), aclEntry(jute.PermWrite, "world", "anyone")}
		if code != jute.OK || !slices.Equal(got, want) || st.Czxid != 4 {
			t.Errorf("masked: %v %v", got, code)
		}
		got, _, code = h.tree.GetACL("/secret", []jute.ID{bob})
		if code != jute.OK || got[0].ID != alice || got[1].ID != bob {
			t.Errorf("admin: %v %v", got, code)
		}
		got[0].Perms = 0 // the caller's copy
		if again, _, _ := h.tree.GetACL("/secret", []jute.ID{bob}); again[0].Perms != jute.PermRead {
			t.Error("GetACL returned the tree's own slice")
		}
		if _, _, code := h.tree.GetACL("/none", nil); code != jute.NoNode {
			t.Error(code)
		}
	})
	t.Run("getAllChildrenNumber", func(t *testing.T) {
		total := int32(h.tree.NodeCount())
		for path, want := range map[string]int32{"/": total - 1, "": total, "/a": 2, "/a/b": 1, "/a/b/c": 0, "/v": 2, "/zookeeper": 2} {
			if got, code := h.tree.GetAllChildrenNumber(path, nil); code != jute.OK || got != want {
				t.Errorf("%q: %d %v, want %d", path, got, code, want)
			}
		}
		if _, code := h.tree.GetAllChildrenNumber("/secret", nil); code != jute.NoAuth {
			t.Error(code)
		}
		if _, code := h.tree.GetAllChildrenNumber("/none", nil); code != jute.NoNode {
			t.Error(code)
		}
	})
	t.Run("getEphemerals", func(t *testing.T) {
		for prefix, want := range map[string][]string{
			"":          {"/v/raw", "/v/rawx", "/w"},
			"/":         {"/v/raw", "/v/rawx", "/w"},
			" / ":       {"/v/raw", "/v/rawx", "/w"},
			"  ":        {"/v/raw", "/v/rawx", "/w"},
			"/v/raw":    {"/v/raw", "/v/rawx"},
			"/v/rawx":   {"/v/rawx"},
			"/w":        {"/w"},
			"/v/raw/":   {},
			" /v/raw":   {},
			"/nothing/": {},
		} {
			if got := h.tree.GetEphemerals(9, prefix); !slices.Equal(got, want) {
				t.Errorf("%q: %v, want %v", prefix, got, want)
			}
		}
		if got := h.tree.GetEphemerals(10, ""); len(got) != 0 {
			t.Errorf("other session: %v", got)
		}
	})
}
