package watch

import (
	"fmt"
	"slices"
	"sync"

	"github.com/zkserverd/zkserverd/jute"
)

// Watcher is a client connection as seen by the registry. Implementations
// must be comparable (normally a pointer), since the registry keys on them.
type Watcher interface {
	// Notify queues ev for the client; zxid is the triggering transaction's
	// zxid, or -1 for events fired by SetWatches. It is called with the
	// registry lock held, so it must never block nor call the Registry (a
	// connection whose queue is full closes itself from another goroutine).
	Notify(ev jute.WatcherEvent, zxid int64)
	// ID returns the connection's session id, used by the reports.
	ID() int64
}

// ReadChecker is implemented by a Watcher that filters notifications by the
// node's ACL (ZooKeeper 3.8.4+/3.9.2+). When an Event carries a non-empty
// ACL, the registry delivers it only if CanRead reports that the connection
// holds READ on that ACL. It runs under the registry lock, like Notify.
type ReadChecker interface {
	CanRead(acl []jute.ACL) bool
}

// Kind is the sort of watch a request registers.
type Kind int

// The kinds of watch. Data and Exist both arm the standard mode of the data
// table; they differ only in which request set them.
const (
	Data                Kind = iota + 1 // getData with watch
	Exist                               // exists with watch, node present or not
	Child                               // getChildren / getChildren2 with watch
	Persistent                          // addWatch mode 0
	PersistentRecursive                 // addWatch mode 1
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Data:
		return "Data"
	case Exist:
		return "Exist"
	case Child:
		return "Child"
	case Persistent:
		return "Persistent"
	case PersistentRecursive:
		return "PersistentRecursive"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// KindForMode maps an addWatch mode to its Kind; ok is false for a mode
// ZooKeeper does not know.
func KindForMode(m jute.AddWatchMode) (k Kind, ok bool) {
	switch m {
	case jute.AddWatchPersistent:
		return Persistent, true
	case jute.AddWatchPersistentRecursive:
		return PersistentRecursive, true
	}
	return 0, false
}

// Event is one watch-triggering change of an applied transaction.
type Event struct {
	Type jute.EventType
	Path string
	// ACL, when not empty, is the ACL a connection needs READ on to receive
	// the event (the node's own; the parent's for NodeChildrenChanged). It is
	// consulted only for watchers that implement ReadChecker.
	ACL []jute.ACL
}

// mode is a set of watch modes on one table entry.
type mode uint8

const (
	modeStandard   mode = 1 << iota // one-shot
	modePersistent                  // addWatch mode 0
	modeRecursive                   // addWatch mode 1; data table only
)

// sub is one connection's entry on one path, both tables at once.
type sub struct {
	w     *watcherState
	data  mode
	child mode
}

// pathEntry holds every connection's entry on one path.
type pathEntry struct {
	path  string
	subs  []sub
	nData int // subs with data != 0
}

// watcherState is the registry's record of one connection.
type watcherState struct {
	w  Watcher
	rc ReadChecker // w as a ReadChecker, or nil
	// subs is the reverse index: each path entry this connection is on, with
	// the position of its sub in that entry's slice.
	subs   map[*pathEntry]int
	nData  int    // entries with data != 0
	inData bool   // listed by the data-table reports (see package doc)
	stamp  uint64 // seq of the last event delivered, for de-duplication
}

// Registry is one member's watch table. The zero value is not usable; call
// NewRegistry. All methods are safe for concurrent use.
type Registry struct {
	// mu guards every field below. Lock order: the tree's lock (held by
	// callers of Trigger and SetWatches) before mu; never the reverse.
	mu       sync.Mutex
	paths    map[string]*pathEntry
	watchers map[Watcher]*watcherState
	seq      uint64 // numbers events, for per-event de-duplication

	dataCount  int // entries in the data table
	childCount int // entries in the child table
	dataPaths  int // paths with at least one data entry
	dataConns  int // watchers with inData set
	recursive  int // entries with modeRecursive; 0 skips the ancestor walk
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		paths:    make(map[string]*pathEntry),
		watchers: make(map[Watcher]*watcherState),
	}
}

// Add registers a watch of kind on path for w. Registering a mode w already
// holds there is a no-op; an unknown kind is ignored. Add must not be called
// for a connection after its RemoveWatcher (the watch would be kept until the
// next RemoveWatcher).
func (r *Registry) Add(w Watcher, path string, kind Kind) {
	var data, child mode
	switch kind {
	case Data, Exist:
		data = modeStandard
	case Child:
		child = modeStandard
	case Persistent:
		data, child = modePersistent, modePersistent
	case PersistentRecursive:
		data = modeRecursive
	default:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(w, path, data, child)
}

// addLocked ORs the modes into w's entry on path, creating what is missing.
func (r *Registry) addLocked(w Watcher, path string, data, child mode) {
	ws := r.watchers[w]
	if ws == nil {
		ws = &watcherState{w: w, subs: make(map[*pathEntry]int)}
		ws.rc, _ = w.(ReadChecker)
		r.watchers[w] = ws
	}
	pe := r.paths[path]
	if pe == nil {
		pe = &pathEntry{path: path}
		r.paths[path] = pe
	}
	i, ok := ws.subs[pe]
	if !ok {
		i = len(pe.subs)
		pe.subs = append(pe.subs, sub{w: ws})
		ws.subs[pe] = i
	}
	s := pe.subs[i]
	r.setModesLocked(pe, i, s.data|data, s.child|child)
}

// setModesLocked changes the modes of pe.subs[i], keeping every counter and
// index in step, and drops the sub, the path entry and the watcher state
// when they become empty. It may move another sub into position i.
func (r *Registry) setModesLocked(pe *pathEntry, i int, data, child mode) {
	s := &pe.subs[i]
	ws := s.w
	r.countData(pe, ws, s.data, data)
	r.childCount += presence(child) - presence(s.child)
	r.recursive += presence(data&modeRecursive) - presence(s.data&modeRecursive)
	s.data, s.child = data, child
	if data != 0 || child != 0 {
		return
	}
	last := len(pe.subs) - 1
	if i != last {
		pe.subs[i] = pe.subs[last]
		pe.subs[i].w.subs[pe] = i
	}
	pe.subs[last] = sub{}
	pe.subs = pe.subs[:last]
	if cap(pe.subs) > 64 && 4*len(pe.subs) < cap(pe.subs) {
		pe.subs = slices.Clip(slices.Clone(pe.subs)) // a hot path emptied out: give memory back
	}
	delete(ws.subs, pe)
	if len(pe.subs) == 0 {
		delete(r.paths, pe.path)
	}
	if len(ws.subs) == 0 && !ws.inData {
		delete(r.watchers, ws.w)
	}
}

// countData updates the data-table counters for a sub going from old to new.
func (r *Registry) countData(pe *pathEntry, ws *watcherState, old, new mode) {
	d := presence(new) - presence(old)
	if d == 0 {
		return
	}
	r.dataCount += d
	ws.nData += d
	pe.nData += d
	if (d < 0 && pe.nData == 0) || (d > 0 && pe.nData == 1) {
		r.dataPaths += d
	}
	if d > 0 && !ws.inData {
		ws.inData = true
		r.dataConns++
	}
}

// presence is 1 when m holds any mode, else 0.
func presence(m mode) int {
	if m != 0 {
		return 1
	}
	return 0
}

// Trigger delivers the events of one applied transaction, in order, to every
// matching watcher (see the package doc for which entries each event type
// hits), consuming one-shot watches. Each event reaches a watcher at most
// once. Events of other types are ignored. zxid is passed to Notify. Trigger
// is called with the tree's write lock held.
func (r *Registry) Trigger(events []Event, zxid int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range events {
		r.triggerLocked(&events[i], zxid)
	}
}

// triggerLocked fires one event.
func (r *Registry) triggerLocked(ev *Event, zxid int64) {
	var data, child bool
	switch ev.Type {
	case jute.EventNodeCreated, jute.EventNodeDataChanged:
		data = true
	case jute.EventNodeDeleted:
		data, child = true, true
	case jute.EventNodeChildrenChanged:
		child = true
	default:
		return
	}
	r.seq++
	if pe := r.paths[ev.Path]; pe != nil {
		r.fireSelfLocked(pe, ev, zxid, data, child)
	}
	if data && r.recursive > 0 {
		r.fireAncestorsLocked(ev, zxid)
	}
}

// fireSelfLocked notifies every entry on the event's own path that has a
// mode in a hit table, and consumes their standard modes.
func (r *Registry) fireSelfLocked(pe *pathEntry, ev *Event, zxid int64, data, child bool) {
	for i := 0; i < len(pe.subs); {
		s := pe.subs[i]
		hitData := data && s.data != 0
		hitChild := child && s.child != 0
		if !hitData && !hitChild {
			i++
			continue
		}
		r.deliverLocked(s.w, ev, zxid)
		nd, nc := s.data, s.child
		if hitData {
			nd &^= modeStandard
		}
		if hitChild {
			nc &^= modeStandard
		}
		r.setModesLocked(pe, i, nd, nc)
		if i < len(pe.subs) && pe.subs[i].w == s.w {
			i++ // s stayed in place; otherwise the last sub moved into i
		}
	}
	// pe may have been dropped from r.paths; nothing else refers to it.
}

// fireAncestorsLocked notifies the recursive entries on every proper
// ancestor of the event's path, root included.
func (r *Registry) fireAncestorsLocked(ev *Event, zxid int64) {
	p := ev.Path
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != '/' {
			continue
		}
		anc := p[:i]
		if i == 0 {
			if len(p) == 1 {
				return // the root has no ancestors
			}
			anc = "/"
		}
		pe := r.paths[anc]
		if pe == nil {
			continue
		}
		for _, s := range pe.subs {
			if s.data&modeRecursive != 0 {
				r.deliverLocked(s.w, ev, zxid)
			}
		}
	}
}

// deliverLocked notifies ws of ev unless it already had this event or its
// ACL filter rejects it.
func (r *Registry) deliverLocked(ws *watcherState, ev *Event, zxid int64) {
	if ws.stamp == r.seq {
		return
	}
	ws.stamp = r.seq
	if len(ev.ACL) > 0 && ws.rc != nil && !ws.rc.CanRead(ev.ACL) {
		return
	}
	ws.w.Notify(jute.WatcherEvent{Type: ev.Type, State: jute.StateSyncConnected, Path: ev.Path}, zxid)
}

// Remove implements removeWatches: it drops w's watches of type t on exactly
// path (see the package doc for what each type covers). It returns jute.OK
// if anything was removed, jute.NoWatcher if nothing matched, and
// jute.MarshallingError for an unknown type.
func (r *Registry) Remove(w Watcher, path string, t jute.WatcherType) jute.Code {
	dataMask, childMask, ok := removeMasks(t)
	if !ok {
		return jute.MarshallingError
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	pe, i, found := r.lookupLocked(w, path)
	if !found {
		return jute.NoWatcher
	}
	s := pe.subs[i]
	if s.data&dataMask == 0 && s.child&childMask == 0 {
		return jute.NoWatcher
	}
	ws, newData := s.w, s.data&^dataMask
	r.setModesLocked(pe, i, newData, s.child&^childMask)
	if s.data != 0 && newData == 0 {
		r.releaseDataLocked(ws)
	}
	return jute.OK
}

// releaseDataLocked applies ZooKeeper's removeWatches bookkeeping after a
// data entry was removed: a connection left without data entries leaves the
// data-table reports, and is forgotten if it has no entries at all.
func (r *Registry) releaseDataLocked(ws *watcherState) {
	if ws.nData > 0 || !ws.inData {
		return
	}
	ws.inData = false
	r.dataConns--
	if len(ws.subs) == 0 {
		delete(r.watchers, ws.w)
	}
}

// removeMasks gives the modes removeWatches of type t takes from each table.
func removeMasks(t jute.WatcherType) (data, child mode, ok bool) {
	const all = modeStandard | modePersistent | modeRecursive
	switch t {
	case jute.WatcherChildren:
		return 0, modeStandard, true
	case jute.WatcherData:
		return modeStandard, 0, true
	case jute.WatcherAny:
		return all, all, true
	case jute.WatcherPersistent:
		return modePersistent, modePersistent, true
	case jute.WatcherPersistentRecursive:
		return modeRecursive, 0, true
	}
	return 0, 0, false
}

// Check implements checkWatches: jute.OK if w holds a watch of type t on
// exactly path, jute.NoWatcher if not, jute.MarshallingError for an unknown
// type. Unlike Remove, type Persistent looks at the data table only, as
// ZooKeeper 3.9 does (the two tables always agree for addWatch mode 0).
func (r *Registry) Check(w Watcher, path string, t jute.WatcherType) jute.Code {
	dataMask, childMask, ok := removeMasks(t)
	if !ok {
		return jute.MarshallingError
	}
	if t == jute.WatcherPersistent {
		childMask = 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	pe, i, found := r.lookupLocked(w, path)
	if !found {
		return jute.NoWatcher
	}
	if s := pe.subs[i]; s.data&dataMask == 0 && s.child&childMask == 0 {
		return jute.NoWatcher
	}
	return jute.OK
}

// lookupLocked finds w's entry on path.
func (r *Registry) lookupLocked(w Watcher, path string) (*pathEntry, int, bool) {
	ws := r.watchers[w]
	pe := r.paths[path]
	if ws == nil || pe == nil {
		return nil, 0, false
	}
	i, ok := ws.subs[pe]
	return pe, i, ok
}

// RemoveWatcher drops every watch of w (its connection closed) and all the
// memory the registry held for it. It costs O(w's watches).
func (r *Registry) RemoveWatcher(w Watcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.watchers[w]
	if ws == nil {
		return
	}
	for pe, i := range ws.subs {
		r.setModesLocked(pe, i, 0, 0)
	}
	if ws.inData {
		ws.inData = false
		r.dataConns--
	}
	delete(r.watchers, w)
}
