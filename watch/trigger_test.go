package watch

import (
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func created(p string) Event { return Event{Type: jute.EventNodeCreated, Path: p} }
func deleted(p string) Event { return Event{Type: jute.EventNodeDeleted, Path: p} }
func changed(p string) Event { return Event{Type: jute.EventNodeDataChanged, Path: p} }
func kids(p string) Event    { return Event{Type: jute.EventNodeChildrenChanged, Path: p} }

// The events one write produces, in ZooKeeper's order.
func createTxn(p, parent string) []Event { return []Event{created(p), kids(parent)} }
func deleteTxn(p, parent string) []Event { return []Event{deleted(p), kids(parent)} }

// reg is one registration by connection number conn.
type reg struct {
	conn int
	path string
	kind Kind
}

// step triggers one transaction and lists, per connection, the events it
// must receive ("NodeCreated /p/c"), in order; connections not listed must
// receive nothing.
type step struct {
	events []Event
	want   map[int][]string
}

// runSteps registers regs on a fresh registry and plays steps.
func runSteps(t *testing.T, regs []reg, steps []step) (*Registry, []*fakeConn) {
	t.Helper()
	r := NewRegistry()
	conns := make([]*fakeConn, 8)
	for i := range conns {
		conns[i] = &fakeConn{id: int64(i)}
	}
	for _, g := range regs {
		r.Add(conns[g.conn], g.path, g.kind)
	}
	checkInvariants(t, r)
	for si, st := range steps {
		zxid := int64(100 + si)
		r.Trigger(st.events, zxid)
		checkInvariants(t, r)
		for ci, c := range conns {
			var have []string
			for _, g := range c.take(t) {
				if g.Zxid != zxid {
					t.Errorf("step %d conn %d: zxid %d, want %d", si, ci, g.Zxid, zxid)
				}
				have = append(have, g.Type.String()+" "+g.Path)
			}
			if !slices.Equal(have, st.want[ci]) {
				t.Errorf("step %d conn %d: got %q, want %q", si, ci, have, st.want[ci])
			}
		}
	}
	return r, conns
}

// TestTriggerWhatFires follows which events each write fires in ZooKeeper,
// and the 3.9 rules in the package doc.
func TestTriggerWhatFires(t *testing.T) {
	tests := []struct {
		name  string
		regs  []reg
		steps []step
	}{{
		name: "create: exist, persistent, recursive ancestors; children to child and persistent parent",
		regs: []reg{
			{0, "/p/c", Exist},
			{1, "/p", Child},
			{2, "/p/c", Persistent},
			{3, "/p", PersistentRecursive},
			{4, "/", PersistentRecursive},
			{5, "/p", Data},       // the parent's data does not change
			{6, "/p/c", Child},    // no child event for the created node itself
			{7, "/p", Persistent}, // persistent parent: children only
		},
		steps: []step{{
			events: createTxn("/p/c", "/p"),
			want: map[int][]string{
				0: {"NodeCreated /p/c"},
				1: {"NodeChildrenChanged /p"},
				2: {"NodeCreated /p/c"},
				3: {"NodeCreated /p/c"},
				4: {"NodeCreated /p/c"},
				7: {"NodeChildrenChanged /p"},
			},
		}, {
			// one-shot exist and child watches are gone; persistent ones stay.
			events: createTxn("/p/c", "/p"),
			want: map[int][]string{
				2: {"NodeCreated /p/c"},
				3: {"NodeCreated /p/c"},
				4: {"NodeCreated /p/c"},
				7: {"NodeChildrenChanged /p"},
			},
		}},
	}, {
		name: "delete: data+child+persistent+recursive, one event per connection",
		regs: []reg{
			{0, "/p/c", Data}, {0, "/p/c", Child}, // both tables: one event
			{1, "/p/c", Exist},
			{2, "/p", Child},
			{3, "/p", Persistent},
			{4, "/p/c", Persistent},
			{5, "/p", PersistentRecursive}, {5, "/p/c", Data},
			{6, "/p/c", Child},
		},
		steps: []step{{
			events: deleteTxn("/p/c", "/p"),
			want: map[int][]string{
				0: {"NodeDeleted /p/c"},
				1: {"NodeDeleted /p/c"},
				2: {"NodeChildrenChanged /p"},
				3: {"NodeChildrenChanged /p"},
				4: {"NodeDeleted /p/c"},
				5: {"NodeDeleted /p/c"},
				6: {"NodeDeleted /p/c"},
			},
		}, {
			// persistent watches survive the deletion of their node.
			events: append(createTxn("/p/c", "/p"), deleteTxn("/p/c", "/p")...),
			want: map[int][]string{
				3: {"NodeChildrenChanged /p", "NodeChildrenChanged /p"},
				4: {"NodeCreated /p/c", "NodeDeleted /p/c"},
				5: {"NodeCreated /p/c", "NodeDeleted /p/c"},
			},
		}},
	}, {
		name: "setData: data, exist, persistent, recursive; not child",
		regs: []reg{
			{0, "/a", Data},
			{1, "/a", Exist},
			{2, "/a", Child},
			{3, "/a", Persistent},
			{4, "/", PersistentRecursive},
			{5, "/a/b", Data}, // a descendant's watch sees nothing
		},
		steps: []step{{
			events: []Event{changed("/a")},
			want: map[int][]string{
				0: {"NodeDataChanged /a"},
				1: {"NodeDataChanged /a"},
				3: {"NodeDataChanged /a"},
				4: {"NodeDataChanged /a"},
			},
		}, {
			events: []Event{changed("/a")},
			want: map[int][]string{
				3: {"NodeDataChanged /a"},
				4: {"NodeDataChanged /a"},
			},
		}},
	}, {
		name: "persistent: direct children only; recursive: descendants, never children events",
		regs: []reg{
			{0, "/p", Persistent},
			{1, "/p", PersistentRecursive},
		},
		steps: []step{{
			events: createTxn("/p/c", "/p"),
			want: map[int][]string{
				0: {"NodeChildrenChanged /p"},
				1: {"NodeCreated /p/c"},
			},
		}, {
			events: append(createTxn("/p/c/d", "/p/c"), changed("/p/c/d"), changed("/p")),
			want: map[int][]string{
				0: {"NodeDataChanged /p"},
				1: {"NodeCreated /p/c/d", "NodeDataChanged /p/c/d", "NodeDataChanged /p"},
			},
		}, {
			events: deleteTxn("/p/c/d", "/p/c"),
			want: map[int][]string{
				1: {"NodeDeleted /p/c/d"},
			},
		}},
	}, {
		name: "recursive match is by path component",
		regs: []reg{
			{0, "/r", PersistentRecursive},
			{1, "/r/x", PersistentRecursive},
		},
		steps: []step{{
			events: []Event{changed("/rx"), changed("/rx/y"), changed("/r/x"), changed("/r/xy"), changed("/r")},
			want: map[int][]string{
				0: {"NodeDataChanged /r/x", "NodeDataChanged /r/xy", "NodeDataChanged /r"},
				1: {"NodeDataChanged /r/x"},
			},
		}},
	}, {
		name: "root: recursive covers all, child watch on / gets top-level children",
		regs: []reg{
			{0, "/", PersistentRecursive},
			{1, "/", Child},
			{2, "/", Persistent},
		},
		steps: []step{{
			events: append(createTxn("/a", "/"), createTxn("/a/b", "/a")...),
			want: map[int][]string{
				0: {"NodeCreated /a", "NodeCreated /a/b"},
				1: {"NodeChildrenChanged /"},
				2: {"NodeChildrenChanged /"},
			},
		}, {
			events: []Event{changed("/")},
			want: map[int][]string{
				0: {"NodeDataChanged /"},
				2: {"NodeDataChanged /"},
			},
		}},
	}, {
		name: "dedup: one event per connection across self, ancestors and tables",
		regs: []reg{
			{0, "/", PersistentRecursive},
			{0, "/a", PersistentRecursive},
			{0, "/a/b", PersistentRecursive},
			{0, "/a/b", Persistent},
			{0, "/a/b", Data},
			{0, "/a/b", Child},
			{0, "/a/b", Data}, // same standard watch twice: one entry
			{1, "/a/b", Exist},
			{1, "/a/b", Data},
		},
		steps: []step{{
			events: []Event{changed("/a/b"), changed("/a/b")},
			want: map[int][]string{
				0: {"NodeDataChanged /a/b", "NodeDataChanged /a/b"},
				1: {"NodeDataChanged /a/b"},
			},
		}, {
			events: []Event{deleted("/a/b")},
			want: map[int][]string{
				0: {"NodeDeleted /a/b"},
			},
		}},
	}, {
		name: "3.9: a later one-shot watch does not replace a persistent one",
		regs: []reg{
			{0, "/p", Persistent},
			{0, "/p", Data},
			{0, "/p", Child},
			{1, "/p", PersistentRecursive},
			{1, "/p", Child},
		},
		steps: []step{{
			events: []Event{changed("/p"), changed("/p")},
			want: map[int][]string{
				0: {"NodeDataChanged /p", "NodeDataChanged /p"},
				1: {"NodeDataChanged /p", "NodeDataChanged /p"},
			},
		}, {
			events: createTxn("/p/c", "/p"),
			want: map[int][]string{
				0: {"NodeChildrenChanged /p"},
				1: {"NodeCreated /p/c", "NodeChildrenChanged /p"},
			},
		}, {
			// conn 1's one-shot child watch is used up; its recursive one stays.
			events: createTxn("/p/d", "/p"),
			want: map[int][]string{
				0: {"NodeChildrenChanged /p"},
				1: {"NodeCreated /p/d"},
			},
		}},
	}, {
		name: "other event types and unwatched paths are ignored",
		regs: []reg{{0, "/a", Data}, {0, "/a", PersistentRecursive}},
		steps: []step{{
			events: []Event{
				{Type: jute.EventNone, Path: "/a"},
				{Type: jute.EventDataWatchRemoved, Path: "/a"},
				changed("/b"), changed("/"),
			},
		}, {
			events: []Event{changed("/a")},
			want:   map[int][]string{0: {"NodeDataChanged /a"}},
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.regs, tc.steps) })
	}
}

// TestTriggerOneShotRemoval checks that fired one-shot watches leave the
// tables while persistent ones stay.
func TestTriggerOneShotRemoval(t *testing.T) {
	r, _ := runSteps(t, []reg{
		{0, "/a", Data}, {0, "/a", Child}, {1, "/a", Exist}, {2, "/a", Persistent},
	}, []step{{
		events: []Event{deleted("/a")},
		want:   map[int][]string{0: {"NodeDeleted /a"}, 1: {"NodeDeleted /a"}, 2: {"NodeDeleted /a"}},
	}})
	if got := r.Count(); got != 2 {
		t.Errorf("Count after delete = %d, want 2 (conn 2's persistent data+child)", got)
	}
}

// TestTriggerACLFilter checks that a ReadChecker may drop an event and that
// the watch is consumed anyway, as in ZooKeeper 3.9.2.
func TestTriggerACLFilter(t *testing.T) {
	open := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "world", ID: "anyone"}}}
	closed := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "digest", ID: "u:x"}}}
	tests := []struct {
		name    string
		acl     []jute.ACL
		deliver bool
	}{
		{"no ACL given", nil, true},
		{"readable", open, true},
		{"not readable", closed, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			filtered := &aclConn{fakeConn{id: 1}}
			plain := &fakeConn{id: 2}
			r.Add(filtered, "/a", Data)
			r.Add(plain, "/a", Data)
			r.Trigger([]Event{{Type: jute.EventNodeDataChanged, Path: "/a", ACL: tc.acl}}, 7)
			if n := len(filtered.take(t)); (n == 1) != tc.deliver || n > 1 {
				t.Errorf("filtered conn got %d events, deliver=%v", n, tc.deliver)
			}
			if n := len(plain.take(t)); n != 1 {
				t.Errorf("conn without ReadChecker got %d events, want 1", n)
			}
			if r.Count() != 0 {
				t.Errorf("Count = %d after the trigger, want 0 (watch consumed)", r.Count())
			}
			checkInvariants(t, r)
		})
	}
}

func TestKindForMode(t *testing.T) {
	tests := []struct {
		mode jute.AddWatchMode
		kind Kind
		ok   bool
	}{
		{jute.AddWatchPersistent, Persistent, true},
		{jute.AddWatchPersistentRecursive, PersistentRecursive, true},
		{2, 0, false},
		{-1, 0, false},
	}
	for _, tc := range tests {
		k, ok := KindForMode(tc.mode)
		if k != tc.kind || ok != tc.ok {
			t.Errorf("KindForMode(%d) = %v, %v; want %v, %v", tc.mode, k, ok, tc.kind, tc.ok)
		}
	}
}

func TestAddUnknownKindIgnored(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeConn{}, "/a", 0)
	r.Add(&fakeConn{}, "/a", PersistentRecursive+1)
	if r.Count() != 0 || len(r.paths) != 0 || len(r.watchers) != 0 {
		t.Errorf("unknown kinds registered something: count %d", r.Count())
	}
}
