package datatree

import (
	"math"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// createCase is one create attempt against a prepared tree.
type createCase struct {
	name     string
	extended bool
	auth     bool
	setup    func(h *harness)
	op       jute.OpCode
	path     string
	acl      []jute.ACL
	flags    jute.CreateMode
	ttl      int64 // only for OpCreateTTL
	want     jute.Code
	wantPath string
}

// noCreate is an ACL that lets everyone do everything but create children.
var noCreate = []jute.ACL{{Perms: jute.PermAll &^ jute.PermCreate, ID: jute.ID{Scheme: "world", ID: "anyone"}}}

func setupNodes(paths ...string) func(*harness) {
	return func(h *harness) {
		for _, p := range paths {
			h.mustCreate(p)
		}
	}
}

func (c *createCase) request() (jute.OpCode, jute.Record) {
	op := c.op
	if op == 0 {
		op = jute.OpCreate
	}
	if op == jute.OpCreateTTL {
		return op, &jute.CreateTTLRequest{Path: c.path, ACL: c.acl, Flags: c.flags, TTL: c.ttl}
	}
	return op, &jute.CreateRequest{Path: c.path, ACL: c.acl, Flags: c.flags}
}

// TestCreatePrecedence covers every step of ZooKeeper 3.8's order of
// create checks, with the answers it gave.
func TestCreatePrecedence(t *testing.T) {
	lockedParent := func(h *harness) {
		h.createACL("/locked", noCreate)
		h.apply(jute.OpSetACL, &jute.SetACLRequest{Path: "/locked", ACL: open, Version: -1})
		h.createACL("/locked/child", open)
		h.apply(jute.OpSetACL, &jute.SetACLRequest{Path: "/locked", ACL: noCreate, Version: -1})
	}
	ephemeralParent := func(h *harness) { h.create("/e", nil, jute.ModeEphemeral) }
	tests := []createCase{
		// 1. flags
		{name: "flags 7 with empty ACL", path: "/a", flags: 7, want: jute.BadArguments},
		{name: "flags -1", path: "/a", acl: open, flags: -1, want: jute.BadArguments},
		// 2. extended types
		{name: "TTL flag without extended types", path: "/a", acl: open, flags: 5, want: jute.Unimplemented},
		{name: "createTTL without extended types", op: jute.OpCreateTTL, path: "/a", acl: open, flags: 5, ttl: 100, want: jute.Unimplemented},
		{name: "Unimplemented before TTL range", op: jute.OpCreateTTL, path: "/a", acl: open, flags: 6, ttl: 0, want: jute.Unimplemented},
		{name: "Unimplemented before path", path: "noslash", flags: 5, want: jute.Unimplemented},
		// 3. ttl
		{name: "flag 5 on opcode 1", extended: true, path: "/a", acl: open, flags: 5, want: jute.BadArguments},
		{name: "flag 6 on opcode 15", extended: true, op: jute.OpCreate2, path: "/a", acl: open, flags: 6, want: jute.BadArguments},
		{name: "flag 5 on opcode 19", extended: true, op: jute.OpCreateContainer, path: "/a", acl: open, flags: 5, want: jute.BadArguments},
		{name: "ttl zero", extended: true, op: jute.OpCreateTTL, path: "/a", acl: open, flags: 5, ttl: 0, want: jute.BadArguments},
		{name: "ttl negative", extended: true, op: jute.OpCreateTTL, path: "/a", acl: open, flags: 5, ttl: -1, want: jute.BadArguments},
		{name: "ttl too large", extended: true, op: jute.OpCreateTTL, path: "/a", acl: open, flags: 5, ttl: jute.MaxTTL + 1, want: jute.BadArguments},
		{name: "ttl max", extended: true, op: jute.OpCreateTTL, path: "/a", acl: open, flags: 5, ttl: jute.MaxTTL, want: jute.OK, wantPath: "/a"},
		{name: "ttl 1", extended: true, op: jute.OpCreateTTL, path: "/a", acl: open, flags: 5, ttl: 1, want: jute.OK, wantPath: "/a"},
		{name: "createTTL with flag 0 and ttl -1 (3.8.0 crash)", extended: true, op: jute.OpCreateTTL, path: "/a", acl: open, flags: 0, ttl: -1, want: jute.BadArguments},
		{name: "createTTL with flag 0 without extended types", op: jute.OpCreateTTL, path: "/a", acl: open, flags: 0, ttl: -1, want: jute.BadArguments},
		{name: "createTTL with flag 1 and ttl", extended: true, op: jute.OpCreateTTL, path: "/a", acl: open, flags: 1, ttl: 10, want: jute.BadArguments},
		{name: "TTL range before path", extended: true, op: jute.OpCreateTTL, path: "noslash", flags: 5, ttl: 0, want: jute.BadArguments},
		// 5. path shape
		{name: "noslash with empty ACL", path: "noslash", want: jute.BadArguments},
		{name: "empty path", path: "", acl: open, want: jute.BadArguments},
		{name: "NUL with missing parent", path: "/missing/a\x00", want: jute.BadArguments},
		// 6. ACL
		{name: "empty ACL with missing parent", path: "/missing/a", want: jute.InvalidACL},
		{name: "bad world id", path: "/a", acl: []jute.ACL{aclEntry(31, "world", "x")}, want: jute.InvalidACL},
		{name: "auth without identities", path: "/a", acl: jute.CreatorAllACL, want: jute.InvalidACL},
		{name: "InvalidACL before NoAuth", auth: true, setup: lockedParent, path: "/locked/x", want: jute.InvalidACL},
		{name: "InvalidACL before invalid final path", path: "/a/.", want: jute.InvalidACL},
		// 7. parent
		{name: "missing parent", path: "/missing/a", acl: open, want: jute.NoNode},
		{name: "trailing slash, missing parent", path: "/x/", acl: open, want: jute.NoNode},
		{name: "double slash", setup: setupNodes("/a"), path: "/a//b", acl: open, want: jute.NoNode},
		{name: "relative path", path: "m/bad", acl: open, want: jute.NoNode},
		{name: "NoNode before invalid final path", path: "/missing/.", acl: open, want: jute.NoNode},
		// 8. CREATE permission
		{name: "no CREATE on parent", auth: true, setup: lockedParent, path: "/locked/x", acl: open, want: jute.NoAuth},
		{name: "NoAuth before NodeExists", auth: true, setup: lockedParent, path: "/locked/child", acl: open, want: jute.NoAuth},
		{name: "NoAuth before invalid final path", auth: true, setup: lockedParent, path: "/locked/.", acl: open, want: jute.NoAuth},
		{name: "no NoAuth without authorizer", setup: lockedParent, path: "/locked/x", acl: open, want: jute.OK, wantPath: "/locked/x"},
		// 9.-10. sequential suffix, then full validation
		{name: "trailing slash, existing parent", setup: setupNodes("/x"), path: "/x/", acl: open, want: jute.BadArguments},
		{name: "sequential trailing slash", setup: setupNodes("/x"), path: "/x/", acl: open, flags: jute.ModePersistentSequential, want: jute.OK, wantPath: "/x/0000000000"},
		{name: "dot component", setup: setupNodes("/a"), path: "/a/.", acl: open, want: jute.BadArguments},
		{name: "sequential dot is legal", setup: setupNodes("/a"), path: "/a/.", acl: open, flags: jute.ModePersistentSequential, want: jute.OK, wantPath: "/a/.0000000000"},
		{name: "control character", path: "/a\tb", acl: open, want: jute.BadArguments},
		{name: "emoji", path: "/😀", acl: open, want: jute.BadArguments},
		{name: "invalid UTF-8", path: "/\xff", acl: open, want: jute.BadArguments},
		// 11. exists
		{name: "create /", path: "/", acl: open, want: jute.NodeExists},
		{name: "create /zookeeper", path: "/zookeeper", acl: open, want: jute.NodeExists},
		{name: "existing node", setup: setupNodes("/a"), path: "/a", acl: open, want: jute.NodeExists},
		{name: "existing ephemeral",
			setup: ephemeralParent, path: "/e", acl: open, want: jute.NodeExists},
		// 12. ephemeral parent
		{name: "child of ephemeral", setup: ephemeralParent, path: "/e/c", acl: open, want: jute.NoChildrenForEphemerals},
		{name: "sequential child of ephemeral", setup: ephemeralParent, path: "/e/c", acl: open, flags: jute.ModeEphemeralSequential, want: jute.NoChildrenForEphemerals},
		{name: "child of container", setup: func(h *harness) {
			h.apply(jute.OpCreateContainer, &jute.CreateRequest{Path: "/c", ACL: open})
		}, path: "/c/x", acl: open, flags: jute.ModeEphemeral, want: jute.OK, wantPath: "/c/x"},
		{name: "child of TTL node", extended: true, setup: func(h *harness) {
			h.apply(jute.OpCreateTTL, &jute.CreateTTLRequest{Path: "/t", ACL: open, Flags: 5, TTL: 10})
		}, path: "/t/x", acl: open, want: jute.OK, wantPath: "/t/x"},
		// success paths
		{name: "zookeeper child allowed", path: "/zookeeper/x", acl: open, want: jute.OK, wantPath: "/zookeeper/x"},
		{name: "quota child allowed", path: "/zookeeper/quota/x", acl: open, want: jute.OK, wantPath: "/zookeeper/quota/x"},
		{name: "non-ASCII", path: "/é", acl: open, want: jute.OK, wantPath: "/é"},
		{name: "auth ACL expands", path: "/a", acl: jute.CreatorAllACL, want: jute.OK, wantPath: "/a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ExtendedTypesEnabled: tc.extended}
			if tc.auth {
				cfg.Authorizer = testAuth{}
			}
			h := newHarness(t, cfg)
			if tc.setup != nil {
				tc.setup(h)
			}
			if tc.name == "auth ACL expands" {
				h.ids = []jute.ID{{Scheme: "ip", ID: "127.0.0.1"}, alice}
			}
			before := h.snapshot()
			op, req := tc.request()
			res := h.apply(op, req)
			if res.Err != tc.want {
				t.Fatalf("err = %v, want %v", res.Err, tc.want)
			}
			if tc.want != jute.OK {
				if res.Response != nil || len(res.Events) != 0 {
					t.Errorf("failed create returned %v, events %v", res.Response, res.Events)
				}
				if after := h.snapshot(); string(after) != string(before) {
					t.Errorf("failed create changed the tree")
				}
				return
			}
			if got := createdPath(res.Response); got != tc.wantPath {
				t.Errorf("path = %q, want %q", got, tc.wantPath)
			}
			if _, code := h.tree.Exists(tc.wantPath, nil); code != jute.OK {
				t.Errorf("created node missing: %v", code)
			}
		})
	}
}

func createdPath(r jute.Record) string {
	switch r := r.(type) {
	case *jute.CreateResponse:
		return r.Path
	case *jute.Create2Response:
		return r.Path
	}
	return "<none>"
}

// TestCreateModes checks the node kind and response for each opcode/flags
// combination, including ZooKeeper 3.8's opcode-over-flags quirks.
func TestCreateModes(t *testing.T) {
	const sess = 0x1000000abc
	tests := []struct {
		name      string
		op        jute.OpCode
		flags     jute.CreateMode
		ttl       int64
		path      string
		wantPath  string
		kind      nodeKind
		owner     int64 // stored
		visible   int64 // Stat.EphemeralOwner
		create2   bool
		ephemeral int
	}{
		{"persistent", jute.OpCreate, 0, 0, "/n", "/n", kindPersistent, 0, 0, false, 0},
		{"ephemeral", jute.OpCreate, 1, 0, "/n", "/n", kindEphemeral, sess, sess, false, 1},
		{"persistent sequential", jute.OpCreate, 2, 0, "/n", "/n0000000000", kindPersistent, 0, 0, false, 0},
		{"ephemeral sequential", jute.OpCreate, 3, 0, "/n", "/n0000000000", kindEphemeral, sess, sess, false, 1},
		{"flag 4 on opcode 1 is persistent", jute.OpCreate, 4, 0, "/n", "/n", kindPersistent, 0, 0, false, 0},
		{"flag 4 on opcode 15 is persistent", jute.OpCreate2, 4, 0, "/n", "/n", kindPersistent, 0, 0, true, 0},
		{"create2 ephemeral", jute.OpCreate2, 1, 0, "/n", "/n", kindEphemeral, sess, sess, true, 1},
		{"container", jute.OpCreateContainer, 4, 0, "/n", "/n", kindContainer, jute.ContainerOwner, 0, true, 0},
		{"container with flag 0", jute.OpCreateContainer, 0, 0, "/n", "/n", kindContainer, jute.ContainerOwner, 0, true, 0},
		{"container with ephemeral flag", jute.OpCreateContainer, 1, 0, "/n", "/n", kindContainer, jute.ContainerOwner, 0, true, 0},
		{"container with sequential flag", jute.OpCreateContainer, 2, 0, "/n", "/n0000000000", kindContainer, jute.ContainerOwner, 0, true, 0},
		{"ttl", jute.OpCreateTTL, 5, 5000, "/n", "/n", kindTTL, jute.TTLOwnerMask | 5000, 0, true, 0},
		{"ttl sequential", jute.OpCreateTTL, 6, 5000, "/n", "/n0000000000", kindTTL, jute.TTLOwnerMask | 5000, 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{ExtendedTypesEnabled: true})
			h.sess = sess
			var req jute.Record = &jute.CreateRequest{Path: tt.path, Data: []byte("d"), ACL: open, Flags: tt.flags}
			if tt.op == jute.OpCreateTTL {
				req = &jute.CreateTTLRequest{Path: tt.path, Data: []byte("d"), ACL: open, Flags: tt.flags, TTL: tt.ttl}
			}
			res := h.apply(tt.op, req)
			if res.Err != jute.OK {
				t.Fatalf("err %v", res.Err)
			}
			n := h.tree.lookup(tt.wantPath)
			if n == nil {
				t.Fatalf("node %s missing", tt.wantPath)
			}
			if n.kind() != tt.kind || n.owner != tt.owner {
				t.Errorf("kind %d owner %#x, want %d %#x", n.kind(), n.owner, tt.kind, tt.owner)
			}
			want := jute.Stat{Czxid: 1, Mzxid: 1, Pzxid: 1, Ctime: 1000, Mtime: 1000, DataLength: 1, EphemeralOwner: tt.visible}
			if st := h.stat(tt.wantPath); st != want {
				t.Errorf("stat %+v, want %+v", st, want)
			}
			switch r := res.Response.(type) {
			case *jute.CreateResponse:
				if tt.create2 || r.Path != tt.wantPath {
					t.Errorf("response %T %+v", r, r)
				}
			case *jute.Create2Response:
				if !tt.create2 || r.Path != tt.wantPath || r.Stat != want {
					t.Errorf("response %T %+v", r, r)
				}
			default:
				t.Errorf("response %T", r)
			}
			if got := h.tree.EphemeralCount(); got != tt.ephemeral {
				t.Errorf("EphemeralCount = %d, want %d", got, tt.ephemeral)
			}
			_, isContainer := h.tree.containers[tt.wantPath]
			_, isTTL := h.tree.ttls[tt.wantPath]
			if isContainer != (tt.kind == kindContainer) || isTTL != (tt.kind == kindTTL) {
				t.Errorf("reaper indexes: container %v ttl %v", isContainer, isTTL)
			}
			wantEvents := []Event{ev(jute.EventNodeCreated, tt.wantPath), ev(jute.EventNodeChildrenChanged, "/")}
			if !eventsEqual(res.Events, wantEvents) {
				t.Errorf("events %v, want %v", res.Events, wantEvents)
			}
		})
	}
}

func eventsEqual(a, b []Event) bool {
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

// TestEphemeralWithoutSession: an ephemeral create with session id 0 stores
// owner 0, which ZooKeeper treats as a persistent node.
func TestEphemeralWithoutSession(t *testing.T) {
	h := newHarness(t, Config{})
	h.sess = 0
	h.create("/e", nil, jute.ModeEphemeral)
	if r := h.create("/e/c", nil, 0); r.Err != jute.OK {
		t.Fatalf("child of owner-0 ephemeral: %v", r.Err)
	}
	if h.tree.EphemeralCount() != 0 {
		t.Error("counted as ephemeral")
	}
}

func TestSequentialNames(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreate("/q")
	seq := func(prefix string) *Result { return h.create(prefix, nil, jute.ModePersistentSequential) }
	expectPath := func(r *Result, want string) {
		t.Helper()
		if r.Err != jute.OK || createdPath(r.Response) != want {
			t.Fatalf("got %v %q, want %q", r.Err, createdPath(r.Response), want)
		}
	}
	expectPath(seq("/q/n"), "/q/n0000000000")
	expectPath(seq("/q/n"), "/q/n0000000001")
	// A plain child create advances the shared counter.
	h.mustCreate("/q/plain")
	expectPath(seq("/q/m"), "/q/m0000000003")
	// Deletes do not bring numbers back.
	h.apply(jute.OpDelete, &jute.DeleteRequest{Path: "/q/m0000000003", Version: -1})
	expectPath(seq("/q/m"), "/q/m0000000004")
	// Failed creates do not advance the counter.
	if r := h.apply(jute.OpCreate, &jute.CreateRequest{Path: "/q/x", Flags: 2}); r.Err != jute.InvalidACL {
		t.Fatalf("want InvalidACL, got %v", r.Err)
	}
	if r := h.create("/q/plain", nil, 0); r.Err != jute.NodeExists {
		t.Fatalf("want NodeExists, got %v", r.Err)
	}
	expectPath(seq("/q/n"), "/q/n0000000005")
	// A hand-made node with the next generated name blocks the sequence
	// until another child create advances the counter.
	h.mustCreate("/q/s0000000007")
	for i := 0; i < 2; i++ {
		if r := seq("/q/s"); r.Err != jute.NodeExists {
			t.Fatalf("want NodeExists on the pre-existing name, got %v", r.Err)
		}
	}
	h.mustCreate("/q/other")
	expectPath(seq("/q/s"), "/q/s0000000008")
	// Top-level sequential names use the root's counter, which the system
	// nodes did not advance.
	expectPath(seq("/top"), "/top0000000001")
}

func TestSequentialOverflow(t *testing.T) {
	h := newHarness(t, Config{})
	h.mustCreate("/q")
	h.tree.lookup("/q").cversion = math.MaxInt32
	r := h.create("/q/n", nil, jute.ModePersistentSequential)
	if createdPath(r.Response) != "/q/n2147483647" {
		t.Fatalf("got %v %q", r.Err, createdPath(r.Response))
	}
	r = h.create("/q/n", nil, jute.ModePersistentSequential)
	if createdPath(r.Response) != "/q/n-2147483648" {
		t.Fatalf("got %v %q", r.Err, createdPath(r.Response))
	}
	r = h.create("/q/n", nil, jute.ModePersistentSequential)
	if createdPath(r.Response) != "/q/n-2147483647" {
		t.Fatalf("got %v %q", r.Err, createdPath(r.Response))
	}
}
