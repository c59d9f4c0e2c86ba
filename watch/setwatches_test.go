package watch

import (
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// fakeTree is a NodeLookup over fixed nodes: path -> {mzxid, pzxid}.
type fakeTree map[string][2]int64

func (f fakeTree) lookup(path string) (bool, int64, int64) {
	n, ok := f[path]
	return ok, n[0], n[1]
}

// The tree every setWatches test starts from, seen with relativeZxid 10.
var swTree = fakeTree{
	"/same": {5, 5},   // unchanged since zxid 10
	"/data": {20, 5},  // data changed
	"/kids": {5, 20},  // children changed
	"/edge": {10, 10}, // changed exactly at rel: not newer
}

const swRel = 10

// TestSetWatchesTable covers ZooKeeper's setWatches rules: each list
// against a missing, changed and unchanged node. wantEvent is the event
// fired at once ("" = none); wantArmed is what checkWatches then reports
// (C D A P R, see checkAll).
func TestSetWatchesTable(t *testing.T) {
	tests := []struct {
		list      string
		path      string
		wantEvent string
		wantArmed string
	}{
		{"data", "/gone", "NodeDeleted", "-----"},
		{"data", "/data", "NodeDataChanged", "-----"},
		{"data", "/kids", "", "-++--"},
		{"data", "/same", "", "-++--"},
		{"data", "/edge", "", "-++--"},
		{"exist", "/gone", "", "-++--"},
		{"exist", "/same", "NodeCreated", "-----"}, // even if it existed before
		{"exist", "/data", "NodeCreated", "-----"},
		{"child", "/gone", "NodeDeleted", "-----"},
		{"child", "/kids", "NodeChildrenChanged", "-----"},
		{"child", "/data", "", "+-+--"},
		{"child", "/same", "", "+-+--"},
		{"child", "/edge", "", "+-+--"},
		{"persistent", "/gone", "", "--++-"},
		{"persistent", "/data", "", "--++-"},
		{"recursive", "/gone", "", "--+-+"},
		{"recursive", "/kids", "", "--+-+"},
	}
	for _, tc := range tests {
		t.Run(tc.list+" "+tc.path, func(t *testing.T) {
			req := &jute.SetWatches2{RelativeZxid: swRel}
			switch tc.list {
			case "data":
				req.DataWatches = []string{tc.path}
			case "exist":
				req.ExistWatches = []string{tc.path}
			case "child":
				req.ChildWatches = []string{tc.path}
			case "persistent":
				req.PersistentWatches = []string{tc.path}
			case "recursive":
				req.PersistentRecursiveWatches = []string{tc.path}
			}
			r := NewRegistry()
			w := &fakeConn{id: 1}
			r.SetWatches(w, req, swTree.lookup)
			var want []got
			if tc.wantEvent != "" {
				want = []got{{eventType(t, tc.wantEvent), tc.path, -1}}
			}
			if have := w.take(t); !slices.Equal(have, want) {
				t.Errorf("events %v, want %v", have, want)
			}
			if have := checkAll(r, w, tc.path); have != tc.wantArmed {
				t.Errorf("armed %s, want %s", have, tc.wantArmed)
			}
			checkInvariants(t, r)
		})
	}
}

// eventType parses an event type name.
func eventType(t *testing.T, name string) jute.EventType {
	t.Helper()
	for e := jute.EventNodeCreated; e <= jute.EventNodeChildrenChanged; e++ {
		if e.String() == name {
			return e
		}
	}
	t.Fatalf("unknown event type %q", name)
	return 0
}

// TestSetWatchesOrderAndArming sends every list at once and checks that the
// missed events come in list order, before anything else, and that the armed
// watches then fire like ordinary ones.
func TestSetWatchesOrderAndArming(t *testing.T) {
	r := NewRegistry()
	w := &fakeConn{id: 1}
	req := &jute.SetWatches2{
		RelativeZxid:               swRel,
		DataWatches:                []string{"/data", "/same", "/gone"},
		ExistWatches:               []string{"/same", "/gone"},
		ChildWatches:               []string{"/kids", "/gone", "/same"},
		PersistentWatches:          []string{"/p"},
		PersistentRecursiveWatches: []string{"/r"},
	}
	r.SetWatches(w, req, swTree.lookup)
	want := []got{
		{jute.EventNodeDataChanged, "/data", -1},
		{jute.EventNodeDeleted, "/gone", -1},
		{jute.EventNodeCreated, "/same", -1},
		{jute.EventNodeChildrenChanged, "/kids", -1},
		{jute.EventNodeDeleted, "/gone", -1},
	}
	if have := w.take(t); !slices.Equal(have, want) {
		t.Errorf("missed events %v, want %v", have, want)
	}
	// Armed: data /same, exist /gone, child /same, persistent /p, recursive /r.
	r.Trigger([]Event{changed("/same"), created("/gone"), kids("/same"), changed("/p"), created("/r/x")}, 30)
	want = []got{
		{jute.EventNodeDataChanged, "/same", 30},
		{jute.EventNodeCreated, "/gone", 30},
		{jute.EventNodeChildrenChanged, "/same", 30},
		{jute.EventNodeDataChanged, "/p", 30},
		{jute.EventNodeCreated, "/r/x", 30},
	}
	if have := w.take(t); !slices.Equal(have, want) {
		t.Errorf("armed watches fired %v, want %v", have, want)
	}
	if got, want := r.Count(), 3; got != want { // persistent data+child, recursive
		t.Errorf("Count = %d, want %d", got, want)
	}
	checkInvariants(t, r)
}

func TestSetWatchesNilArguments(t *testing.T) {
	r := NewRegistry()
	w := &fakeConn{id: 1}
	r.SetWatches(w, nil, swTree.lookup)
	r.SetWatches(w, &jute.SetWatches2{DataWatches: []string{"/same"}}, nil)
	if r.Count() != 0 || len(w.take(t)) != 0 {
		t.Errorf("nil arguments armed or fired something")
	}
}
