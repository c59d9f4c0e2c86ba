package watch

import (
	"fmt"
	"sync"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// got is one notification as a fake connection saw it.
type got struct {
	Type jute.EventType
	Path string
	Zxid int64
}

func (g got) String() string { return fmt.Sprintf("%s %s @%d", g.Type, g.Path, g.Zxid) }

// fakeConn is a Watcher that records what it is told.
type fakeConn struct {
	id int64

	mu       sync.Mutex // guards events and badState
	events   []got
	badState int // notifications whose state was not SyncConnected
}

func (c *fakeConn) ID() int64 { return c.id }

func (c *fakeConn) Notify(ev jute.WatcherEvent, zxid int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.State != jute.StateSyncConnected {
		c.badState++
	}
	c.events = append(c.events, got{ev.Type, ev.Path, zxid})
}

// take returns and clears the recorded events.
func (c *fakeConn) take(t *testing.T) []got {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.badState != 0 {
		t.Errorf("conn %d: %d notifications without state SyncConnected", c.id, c.badState)
	}
	out := c.events
	c.events, c.badState = nil, 0
	return out
}

// aclConn is a fakeConn that may read only when the event's ACL names its
// scheme "world".
type aclConn struct{ fakeConn }

func (c *aclConn) CanRead(acl []jute.ACL) bool {
	for _, a := range acl {
		if a.ID.Scheme == "world" && a.Perms&jute.PermRead != 0 {
			return true
		}
	}
	return false
}

// checkInvariants recomputes every counter and index of r from scratch and
// fails t on any mismatch.
func checkInvariants(t *testing.T, r *Registry) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var data, child, dataPaths, rec, conns int
	seen := make(map[*watcherState]map[*pathEntry]int)
	for path, pe := range r.paths {
		if pe.path != path {
			t.Errorf("path entry %q filed under %q", pe.path, path)
		}
		if len(pe.subs) == 0 {
			t.Errorf("empty path entry %q kept", path)
		}
		nd := 0
		for i, s := range pe.subs {
			if s.data == 0 && s.child == 0 {
				t.Errorf("%q: empty sub kept", path)
			}
			if r.watchers[s.w.w] != s.w {
				t.Errorf("%q: sub of an unregistered watcher", path)
			}
			if seen[s.w] == nil {
				seen[s.w] = make(map[*pathEntry]int)
			}
			if _, dup := seen[s.w][pe]; dup {
				t.Errorf("%q: watcher listed twice", path)
			}
			seen[s.w][pe] = i
			if s.data != 0 {
				nd++
			}
			if s.child != 0 {
				child++
			}
			if s.data&modeRecursive != 0 {
				rec++
			}
			if s.child&modeRecursive != 0 {
				t.Errorf("%q: recursive mode in the child table", path)
			}
		}
		if nd != pe.nData {
			t.Errorf("%q: nData %d, counted %d", path, pe.nData, nd)
		}
		data += nd
		if nd > 0 {
			dataPaths++
		}
	}
	for w, ws := range r.watchers {
		if ws.w != w {
			t.Errorf("watcher state filed under another watcher")
		}
		if len(ws.subs) != len(seen[ws]) {
			t.Errorf("watcher %d: reverse index has %d entries, table %d", w.ID(), len(ws.subs), len(seen[ws]))
		}
		nd := 0
		for pe, i := range ws.subs {
			if seen[ws][pe] != i {
				t.Errorf("watcher %d: stale position for %q", w.ID(), pe.path)
			}
			if i < len(pe.subs) && pe.subs[i].data != 0 {
				nd++
			}
		}
		if nd != ws.nData {
			t.Errorf("watcher %d: nData %d, counted %d", w.ID(), ws.nData, nd)
		}
		if nd > 0 && !ws.inData {
			t.Errorf("watcher %d: data watches but not listed", w.ID())
		}
		if ws.inData {
			conns++
		}
		if len(ws.subs) == 0 && !ws.inData {
			t.Errorf("watcher %d: empty state kept", w.ID())
		}
	}
	if data != r.dataCount || child != r.childCount || dataPaths != r.dataPaths ||
		rec != r.recursive || conns != r.dataConns {
		t.Errorf("counters data=%d child=%d paths=%d rec=%d conns=%d; recomputed %d %d %d %d %d",
			r.dataCount, r.childCount, r.dataPaths, r.recursive, r.dataConns,
			data, child, dataPaths, rec, conns)
	}
}
