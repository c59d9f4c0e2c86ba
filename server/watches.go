package server

import (
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/watch"
)

var _ watch.Watcher = (*conn)(nil)

// ID implements watch.Watcher: the connection's session id.
func (c *conn) ID() int64 { return c.sessionID.Load() }

// notificationZxid is the zxid written in a notification's header. ZooKeeper
// 3.8 always writes -1 (3.9 writes the triggering zxid); the captured 3.8
// frames are the reference, and clients ignore the field.
const notificationZxid = -1

// Notify implements watch.Watcher. It runs under the tree's write lock and
// never blocks: a client that lets notifications pile up is dropped.
func (c *conn) Notify(ev jute.WatcherEvent, _ int64) {
	h := jute.ReplyHeader{Xid: jute.XidNotification, Zxid: notificationZxid, Err: jute.OK}
	if !c.out.push(jute.AppendFrame(nil, &h, &ev), true) {
		c.s.stats.slowDisconnects.Add(1)
		go c.abort("too many undelivered notifications (slow client)")
	}
}

func toWatchEvents(evs []datatree.Event) []watch.Event {
	out := make([]watch.Event, len(evs))
	for i, e := range evs {
		out[i] = watch.Event{Type: e.Type, Path: e.Path}
	}
	return out
}

// watchOnExists returns the registration callback of exists: a data watch
// when the node exists, an exist watch when it does not.
func (c *conn) watchOnExists(r *jute.PathWatchRequest) func(bool) {
	if !r.Watch {
		return nil
	}
	return func(exists bool) {
		if exists {
			c.s.watches.Add(c, r.Path, watch.Data)
		} else {
			c.s.watches.Add(c, r.Path, watch.Exist)
		}
	}
}

// watchIfExists returns a callback registering a watch of kind when the
// node exists (getData, getChildren).
func (c *conn) watchIfExists(r *jute.PathWatchRequest, kind watch.Kind) func(bool) {
	if !r.Watch {
		return nil
	}
	return func(exists bool) {
		if exists {
			c.s.watches.Add(c, r.Path, kind)
		}
	}
}

// watchOp handles addWatch, removeWatches, checkWatches and setWatches.
func (c *conn) watchOp(op jute.OpCode, req jute.Record) (jute.Code, jute.Record) {
	switch op {
	case jute.OpAddWatch:
		r := req.(*jute.AddWatchRequest)
		switch r.Mode {
		case jute.AddWatchPersistent:
			c.s.watches.Add(c, r.Path, watch.Persistent)
		case jute.AddWatchPersistentRecursive:
			c.s.watches.Add(c, r.Path, watch.PersistentRecursive)
		default:
			return jute.MarshallingError, nil
		}
		return jute.OK, &jute.IntResponse{Value: 0}
	case jute.OpRemoveWatches, jute.OpCheckWatches:
		r := req.(*jute.WatchesRequest)
		if r.Type < jute.WatcherChildren || r.Type > jute.WatcherPersistentRecursive {
			return jute.MarshallingError, nil
		}
		if op == jute.OpRemoveWatches {
			return c.s.watches.Remove(c, r.Path, r.Type), nil
		}
		return c.s.watches.Check(c, r.Path, r.Type), nil
	case jute.OpSetWatches:
		r := req.(*jute.SetWatches)
		c.setWatches(&jute.SetWatches2{RelativeZxid: r.RelativeZxid, DataWatches: r.DataWatches,
			ExistWatches: r.ExistWatches, ChildWatches: r.ChildWatches})
		return jute.OK, nil
	case jute.OpSetWatches2:
		c.setWatches(req.(*jute.SetWatches2))
		return jute.OK, nil
	}
	return jute.Unimplemented, nil
}

// setWatches re-arms a reconnected client's watches, firing those whose
// event it missed, atomically with respect to writes.
func (c *conn) setWatches(r *jute.SetWatches2) {
	c.s.node.Tree().View(func(lookup func(string) (jute.Stat, bool)) {
		c.s.watches.SetWatches(c, r, func(path string) (bool, int64, int64) {
			st, ok := lookup(path)
			return ok, st.Mzxid, st.Pzxid
		})
	})
}
