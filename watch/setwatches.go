package watch

import "github.com/zkserverd/zkserverd/jute"

// NodeLookup reports whether path exists in the tree and, if so, its mzxid
// and pzxid. SetWatches calls it before taking the registry lock, so it may
// read the tree under the tree's read lock held by the caller.
type NodeLookup func(path string) (exists bool, mzxid, pzxid int64)

// SetWatches re-arms a reconnected client's watches (setWatches and
// setWatches2) relative to req.RelativeZxid, the last zxid the client saw:
//
//	list                node missing     node changed                 otherwise
//	DataWatches         NodeDeleted      mzxid > rel: NodeDataChanged arm Data
//	ExistWatches        arm Exist        -                            NodeCreated
//	ChildWatches        NodeDeleted      pzxid > rel: NodeChildrenChanged arm Child
//	PersistentWatches   arm Persistent
//	PersistentRecursive arm PersistentRecursive
//
// Missed events go to w.Notify with zxid -1, in list order, and their
// watches are not armed (they were one-shot). The caller holds the tree's
// read lock across the call so no write slips in between the lookups and the
// registration; lookup must be non-nil (a nil lookup arms nothing).
func (r *Registry) SetWatches(w Watcher, req *jute.SetWatches2, lookup NodeLookup) {
	if req == nil || lookup == nil {
		return
	}
	plan := planSetWatches(req, lookup)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range plan {
		if st.fire != 0 {
			ev := jute.WatcherEvent{Type: st.fire, State: jute.StateSyncConnected, Path: st.path}
			w.Notify(ev, -1)
			continue
		}
		r.addLocked(w, st.path, st.data, st.child)
	}
}

// setWatchStep is one decided entry of a setWatches request: fire an event,
// or arm modes.
type setWatchStep struct {
	path        string
	fire        jute.EventType // 0: arm data/child instead
	data, child mode
}

// planSetWatches decides every entry of req from the tree lookups, in the
// order the events must be sent.
func planSetWatches(req *jute.SetWatches2, lookup NodeLookup) []setWatchStep {
	n := len(req.DataWatches) + len(req.ExistWatches) + len(req.ChildWatches) +
		len(req.PersistentWatches) + len(req.PersistentRecursiveWatches)
	plan := make([]setWatchStep, 0, n)
	rel := req.RelativeZxid
	for _, p := range req.DataWatches {
		st := setWatchStep{path: p, data: modeStandard}
		switch exists, mzxid, _ := lookup(p); {
		case !exists:
			st.fire = jute.EventNodeDeleted
		case mzxid > rel:
			st.fire = jute.EventNodeDataChanged
		}
		plan = append(plan, st)
	}
	for _, p := range req.ExistWatches {
		st := setWatchStep{path: p, data: modeStandard}
		if exists, _, _ := lookup(p); exists {
			st.fire = jute.EventNodeCreated
		}
		plan = append(plan, st)
	}
	for _, p := range req.ChildWatches {
		st := setWatchStep{path: p, child: modeStandard}
		switch exists, _, pzxid := lookup(p); {
		case !exists:
			st.fire = jute.EventNodeDeleted
		case pzxid > rel:
			st.fire = jute.EventNodeChildrenChanged
		}
		plan = append(plan, st)
	}
	for _, p := range req.PersistentWatches {
		plan = append(plan, setWatchStep{path: p, data: modePersistent, child: modePersistent})
	}
	for _, p := range req.PersistentRecursiveWatches {
		plan = append(plan, setWatchStep{path: p, data: modeRecursive})
	}
	return plan
}
