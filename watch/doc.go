// Package watch is one member's registry of ZooKeeper watches: which client
// connection asked to be told about which path, and in which mode. Watches are
// local to the member that accepted them and are never replicated; a client
// that reconnects elsewhere re-arms them with setWatches.
//
// # Tables and modes
//
// Like ZooKeeper, the registry keeps two tables, each keyed by (connection,
// path), and every entry carries a set of independent modes:
//
//	table  filled by                                        modes
//	data   getData (Data), exists (Exist), addWatch          standard, persistent, recursive
//	child  getChildren[2] (Child), addWatch persistent       standard, persistent
//
// addWatch mode 0 (Persistent) arms the data and the child table; mode 1
// (PersistentRecursive) arms the data table only (3.9 behaviour). Registering
// a mode a connection already holds on that path changes nothing, so the same
// getData watch set twice gives one event.
//
// # The 3.9 rules implemented
//
// This package follows ZooKeeper 3.9, not the 3.8
// "latest registration wins" quirk:
//
//   - Modes on one (connection, path, table) entry are independent: a
//     one-shot getData watch on a path with a persistent watch adds a standard
//     mode next to it; when it fires, only the standard mode is consumed.
//   - Trigger, per event (the caller lists a transaction's events in
//     ZooKeeper's order, e.g. NodeCreated(/p/c) then NodeChildrenChanged(/p)):
//     NodeCreated and NodeDataChanged hit the data table on the path (any
//     mode) and recursive entries on every ancestor; NodeDeleted hits the data
//     and child tables on the path (any mode) and recursive entries on every
//     ancestor; NodeChildrenChanged hits the child table on the path only (any
//     mode), so recursive watches never see it. Ancestors are path-component
//     prefixes: a recursive watch on /r covers /r/x but not /rx, and one on /
//     covers every node. A connection receives at most one copy of an event
//     however many entries matched. Matching entries lose their standard mode
//     (one-shot); persistent and recursive modes stay, also across deletion
//     of the node. An ancestor's non-recursive entries are untouched.
//   - Remove (removeWatches) and Check (checkWatches), by WatcherType:
//     Children = the standard mode of the child table; Data = the standard
//     mode of the data table (3.9: a persistent or recursive watch is NOT
//     removed or matched by Data); Any = every mode of both tables (Check:
//     any entry in either table); Persistent (4) = the persistent mode of both
//     tables (Check looks at the data table); PersistentRecursive (5) = the
//     recursive mode of the data table. Both return jute.NoWatcher when
//     nothing matched and jute.MarshallingError for any other type value. A
//     3.8-compatible server rejects types 4 and 5 itself before calling.
//   - SetWatches applies ZooKeeper's rules in list order (data, exist,
//     child, persistent, recursive), notifying missed events with zxid -1 and
//     arming the rest.
//
// The reports (Summary, ByConnection, ByPath and the wchs/wchc/wchp text)
// describe the data table only, as ZooKeeper's do, while Count covers both
// tables (mntr zk_watch_count). As in ZooKeeper, a connection whose data
// watches were all consumed by triggers still counts in Summary's
// connections (and is listed by wchc without paths) until it closes or a
// removeWatches empties its data table.
//
// ZooKeeper 3.8.4+/3.9.2+ drop a notification for a connection that may not
// READ the node; an Event may carry the node's ACL and a Watcher that also
// implements ReadChecker is asked before each delivery (the watch is
// consumed either way, as in ZooKeeper).
//
// # Locking
//
// A Registry has one mutex. Trigger is called by the tree with its write lock
// held, so the lock order is: tree lock, then registry lock, never the
// reverse. Watcher.Notify and ReadChecker.CanRead run with the registry lock
// held: they must not block and must not call back into the Registry (a
// connection that has to close itself does so from another goroutine).
package watch
