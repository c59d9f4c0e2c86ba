package watch

import (
	"fmt"
	"sync"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// allTypes are the five WatcherType values of 3.9.
var allTypes = []jute.WatcherType{
	jute.WatcherChildren, jute.WatcherData, jute.WatcherAny,
	jute.WatcherPersistent, jute.WatcherPersistentRecursive,
}

// checkAll reports Check on path for every type as a compact string:
// one letter per type in allTypes order, "+" for OK and "-" for NoWatcher.
func checkAll(r *Registry, w Watcher, path string) string {
	out := make([]byte, len(allTypes))
	for i, typ := range allTypes {
		switch r.Check(w, path, typ) {
		case jute.OK:
			out[i] = '+'
		case jute.NoWatcher:
			out[i] = '-'
		default:
			out[i] = '?'
		}
	}
	return string(out)
}

// TestCheck lists, for each set of registrations on /p, what checkWatches
// answers for types Children, Data, Any, Persistent, PersistentRecursive.
func TestCheck(t *testing.T) {
	tests := []struct {
		kinds []Kind
		want  string // C D A P R
	}{
		{nil, "-----"},
		{[]Kind{Data}, "-++--"},
		{[]Kind{Exist}, "-++--"},
		{[]Kind{Child}, "+-+--"},
		{[]Kind{Persistent}, "--++-"},
		{[]Kind{PersistentRecursive}, "--+-+"},
		{[]Kind{Persistent, Data}, "-+++-"},
		{[]Kind{PersistentRecursive, Child}, "+-+-+"},
		{[]Kind{Data, Child, Persistent, PersistentRecursive}, "+++++"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.kinds), func(t *testing.T) {
			r := NewRegistry()
			w, other := &fakeConn{id: 1}, &fakeConn{id: 2}
			for _, k := range tc.kinds {
				r.Add(w, "/p", k)
			}
			r.Add(other, "/q", Data)
			if got := checkAll(r, w, "/p"); got != tc.want {
				t.Errorf("Check on /p = %s, want %s", got, tc.want)
			}
			// Exact path only: neither a child nor another connection matches.
			if got := checkAll(r, w, "/p/x"); got != "-----" {
				t.Errorf("Check on /p/x = %s, want -----", got)
			}
			if got := checkAll(r, other, "/p"); got != "-----" {
				t.Errorf("other conn's Check on /p = %s, want -----", got)
			}
		})
	}
}

// TestRemove plays removeWatches calls on /p and checks the code of each
// and what checkWatches reports afterwards.
func TestRemove(t *testing.T) {
	type call struct {
		typ       jute.WatcherType
		want      jute.Code
		wantCheck string // C D A P R after the call
	}
	tests := []struct {
		name  string
		kinds []Kind
		calls []call
	}{{
		name:  "nothing registered",
		calls: []call{{jute.WatcherAny, jute.NoWatcher, "-----"}, {jute.WatcherData, jute.NoWatcher, "-----"}},
	}, {
		name:  "data removes data and exist one-shots",
		kinds: []Kind{Data, Exist, Child},
		calls: []call{
			{jute.WatcherData, jute.OK, "+-+--"},
			{jute.WatcherData, jute.NoWatcher, "+-+--"},
			{jute.WatcherChildren, jute.OK, "-----"},
			{jute.WatcherChildren, jute.NoWatcher, "-----"},
		},
	}, {
		name:  "3.9: data does not remove persistent",
		kinds: []Kind{Persistent},
		calls: []call{
			{jute.WatcherData, jute.NoWatcher, "--++-"},
			{jute.WatcherChildren, jute.NoWatcher, "--++-"},
			{jute.WatcherPersistentRecursive, jute.NoWatcher, "--++-"},
			{jute.WatcherPersistent, jute.OK, "-----"},
			{jute.WatcherPersistent, jute.NoWatcher, "-----"},
		},
	}, {
		name:  "persistent next to one-shots",
		kinds: []Kind{Persistent, Data, Child},
		calls: []call{
			{jute.WatcherPersistent, jute.OK, "+++--"},
			{jute.WatcherAny, jute.OK, "-----"},
		},
	}, {
		name:  "recursive",
		kinds: []Kind{PersistentRecursive, Data},
		calls: []call{
			{jute.WatcherPersistent, jute.NoWatcher, "-++-+"},
			{jute.WatcherPersistentRecursive, jute.OK, "-++--"},
			{jute.WatcherPersistentRecursive, jute.NoWatcher, "-++--"},
		},
	}, {
		name:  "any removes every mode of both tables",
		kinds: []Kind{Data, Child, Persistent, PersistentRecursive},
		calls: []call{
			{jute.WatcherAny, jute.OK, "-----"},
			{jute.WatcherAny, jute.NoWatcher, "-----"},
		},
	}, {
		name:  "unknown types",
		kinds: []Kind{Data, Child, Persistent, PersistentRecursive},
		calls: []call{
			{0, jute.MarshallingError, "+++++"},
			{6, jute.MarshallingError, "+++++"},
			{-1, jute.MarshallingError, "+++++"},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			w := &fakeConn{id: 1}
			for _, k := range tc.kinds {
				r.Add(w, "/p", k)
			}
			for i, c := range tc.calls {
				if got := r.Remove(w, "/p", c.typ); got != c.want {
					t.Errorf("call %d: Remove(type %d) = %v, want %v", i, c.typ, got, c.want)
				}
				if got := checkAll(r, w, "/p"); got != c.wantCheck {
					t.Errorf("call %d: Check after Remove(type %d) = %s, want %s", i, c.typ, got, c.wantCheck)
				}
				checkInvariants(t, r)
			}
		})
	}
}

func TestCheckUnknownType(t *testing.T) {
	r := NewRegistry()
	w := &fakeConn{id: 1}
	r.Add(w, "/p", Data)
	for _, typ := range []jute.WatcherType{0, 6, 100} {
		if got := r.Check(w, "/p", typ); got != jute.MarshallingError {
			t.Errorf("Check(type %d) = %v, want MarshallingError", typ, got)
		}
	}
}

// TestRemoveStopsEvents checks that a removed watch no longer fires and
// that removal touches only the given connection and path.
func TestRemoveStopsEvents(t *testing.T) {
	r := NewRegistry()
	a, b := &fakeConn{id: 1}, &fakeConn{id: 2}
	r.Add(a, "/p", PersistentRecursive)
	r.Add(b, "/p", PersistentRecursive)
	r.Add(a, "/q", Data)
	if code := r.Remove(a, "/p", jute.WatcherPersistentRecursive); code != jute.OK {
		t.Fatalf("Remove = %v", code)
	}
	r.Trigger([]Event{changed("/p/x"), changed("/q")}, 5)
	if got := a.take(t); len(got) != 1 || got[0].Path != "/q" {
		t.Errorf("conn a got %v, want only /q", got)
	}
	if got := b.take(t); len(got) != 1 || got[0].Path != "/p/x" {
		t.Errorf("conn b got %v, want /p/x", got)
	}
	if r.recursiveCount() != 1 {
		t.Errorf("recursive count %d, want 1", r.recursiveCount())
	}
	checkInvariants(t, r)
}

// recursiveCount returns the number of recursive entries.
func (r *Registry) recursiveCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recursive
}

// TestRemoveWatcherReleases checks that closing connections drops every
// watch and leaves no internal state behind.
func TestRemoveWatcherReleases(t *testing.T) {
	r := NewRegistry()
	a, b := &fakeConn{id: 1}, &fakeConn{id: 2}
	for i := range 50 {
		p := fmt.Sprintf("/n/%d", i)
		for _, w := range []*fakeConn{a, b} {
			for _, k := range []Kind{Data, Child, Persistent, PersistentRecursive} {
				r.Add(w, p, k)
			}
		}
	}
	r.Add(a, "/only-a", Exist)
	if got, want := r.Count(), 2*50*2+1; got != want {
		t.Fatalf("Count = %d, want %d", got, want)
	}
	r.RemoveWatcher(a)
	checkInvariants(t, r)
	if got, want := r.Count(), 50*2; got != want {
		t.Errorf("Count after closing a = %d, want %d", got, want)
	}
	r.Trigger([]Event{changed("/only-a"), changed("/n/3")}, 9)
	if got := a.take(t); len(got) != 0 {
		t.Errorf("closed conn got %v", got)
	}
	if got := b.take(t); len(got) != 1 {
		t.Errorf("conn b got %v, want one event", got)
	}
	r.RemoveWatcher(b)
	r.RemoveWatcher(b) // closing twice is harmless
	checkInvariants(t, r)
	assertEmpty(t, r)
}

// assertEmpty fails t if r holds anything at all.
func assertEmpty(t *testing.T, r *Registry) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.paths) != 0 || len(r.watchers) != 0 || r.dataCount != 0 || r.childCount != 0 ||
		r.dataPaths != 0 || r.dataConns != 0 || r.recursive != 0 {
		t.Errorf("registry not empty: %d paths, %d watchers, counters %d/%d/%d/%d/%d",
			len(r.paths), len(r.watchers), r.dataCount, r.childCount, r.dataPaths, r.dataConns, r.recursive)
	}
}

// TestFiredAndRemovedReleaseMemory checks that watches consumed by triggers
// or removeWatches leave nothing behind once the connection closes, and that
// child-only connections are forgotten as soon as their last watch goes.
func TestFiredAndRemovedReleaseMemory(t *testing.T) {
	r := NewRegistry()
	a, b := &fakeConn{id: 1}, &fakeConn{id: 2}
	r.Add(a, "/x", Data)
	r.Add(b, "/x", Child)
	r.Trigger([]Event{deleted("/x")}, 3)
	checkInvariants(t, r)
	r.mu.Lock()
	_, keptA := r.watchers[a]
	_, keptB := r.watchers[b]
	nPaths := len(r.paths)
	r.mu.Unlock()
	if !keptA || keptB || nPaths != 0 {
		t.Errorf("after firing: a kept=%v (want true, wchs quirk), b kept=%v (want false), %d paths", keptA, keptB, nPaths)
	}
	r.RemoveWatcher(a)
	assertEmpty(t, r)
}

// TestConcurrent hammers one registry from several goroutines; run with
// -race. Every goroutine owns its connections, so the final state is known.
func TestConcurrent(t *testing.T) {
	r := NewRegistry()
	const workers, rounds = 8, 300
	var wg sync.WaitGroup
	conns := make([]*fakeConn, workers)
	for i := range workers {
		conns[i] = &fakeConn{id: int64(i)}
		wg.Add(1)
		go func(w *fakeConn) {
			defer wg.Done()
			for j := range rounds {
				p := fmt.Sprintf("/c/%d", j%17)
				r.Add(w, p, Kind(j%5)+1)
				r.Trigger([]Event{changed(p), kids("/c"), deleted(fmt.Sprintf("/c/%d", j%13))}, int64(j))
				r.Check(w, p, jute.WatcherAny)
				if j%7 == 0 {
					r.Remove(w, p, jute.WatcherAny)
				}
				if j%50 == 0 {
					r.Summary()
					r.ByConnection()
					r.ByPath()
					r.Count()
				}
			}
			r.RemoveWatcher(w)
		}(conns[i])
	}
	wg.Wait()
	checkInvariants(t, r)
	assertEmpty(t, r)
	for _, c := range conns {
		c.take(t)
	}
}
