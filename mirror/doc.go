// Package mirror holds a zkserverd replica of an Apache ZooKeeper
// ensemble's state: the znode tree (a datatree.Tree), the session table (a
// session.Table: ids and timeouts) and the last zxid. It is fed what a Zab
// learner receives: a snapshot in ZooKeeper's own serialization, then the
// committed transactions in ZooKeeper's log-entry format, one zxid at a
// time. After every transaction its tree, sessions and zxid are
// ZooKeeper's, or it says it has diverged and stops.
//
// State implements the Handler that package zab feeds (without importing
// it):
//
//	st := mirror.New(mirror.Options{Logger: lg, Applied: srv.applied})
//	// zab: st.Snapshot(zxid, r) on SNAP, st.Truncate(zxid) on TRUNC,
//	//      st.Txn(zxid, entry) for every committed txn, st.UpToDate().
//	// server: st.Tree() and st.Sessions() to read, st.Err() before serving.
//
// # How a transaction is applied
//
// zkserverd's tree computes results from requests (datatree.Txn), while
// ZooKeeper's transactions carry decided results. Txn decodes the entry
// (internal/zkimport.DecodeTxn), turns each ZooKeeper txn into the request
// that must produce exactly that result, applies it with Tree.Apply at the
// ZooKeeper zxid and header time, and checks the outcome against the txn:
//
//   - create, create2, createContainer, createTTL: a create of the exact
//     path ZooKeeper chose (a sequential node's final name, so the tree
//     never picks a suffix of its own) with the ephemeral flag, container
//     or TTL kind of the txn; the parent's stored cversion afterwards must
//     be the txn's parentCVersion, the new node's czxid the zxid and its
//     ephemeralOwner the header's session for an ephemeral.
//   - setData and setACL carry the new (a)version: the request expects
//     the version before it, so the tree refuses it if its node differs.
//   - delete and deleteContainer (container and TTL reaping) must
//     succeed; check (it carries the node's version + 1) must too.
//   - multi: the elements as one datatree multi, every element checked; a
//     failed multi (an ErrorTxn element) changes nothing, and its result
//     has ZooKeeper's per-element codes.
//   - error (a request that failed): changes nothing but the zxid.
//   - createSession adds the session and its timeout; closeSession deletes
//     its ephemerals (in 3.6+ the txn lists them, and the list must be the
//     session's ephemerals here) and removes it.
//   - reconfig (a SetDataTxn of /zookeeper/config) stores the new
//     configuration text the way ZooKeeper does (Tree.SetConfigNode:
//     version -1, mzxid and mtime of the txn) and reports a data change
//     of /zookeeper/config. The mirror does not act on the membership
//     change: that is the protocol's business.
//
// Every transaction that carries ZooKeeper's tree digest (TxnDigest, 3.6+,
// digest version 2) is also checked against the same digest computed here
// (digest.go: DigestCalculator's CRC32 per node, summed; nodes under
// /zookeeper/ left out), kept up to date from the nodes each transaction
// touches.
//
// Outside the sync phase (below), zxids must follow each other: the next
// counter of the same epoch, or the first of a later one. Any failure — a
// gap, a repeat, an entry that does not decode, a transaction the tree
// does not apply as ZooKeeper did, a digest mismatch — is a divergence:
// Txn returns an error, logs it, and the State is broken (Err) until the
// next Snapshot replaces it.
//
// The session table holds ids and timeouts; its owner column (the
// zkserverd member a session's connection uses) is the server's to set.
//
// # Concurrency
//
// Snapshot, Truncate, Txn and UpToDate are called from one goroutine (the
// protocol's). Tree, Sessions, LastZxid, Err and Synced may be called from
// any goroutine; the tree and the session table have their own locks. A
// Snapshot replaces the tree and the table: readers fetch them again (and
// drop their watches) after one.
//
// The Applied callback sees each applied transaction's session, cxid, zxid
// and datatree.Result (with its watch events). For a transaction that
// changes the tree it runs inside Tree.Apply's hook, under the tree's write
// lock, so events are handed over before any reader sees the new state; it
// must not call into the tree or the State. A transaction found diverged
// after its Apply has already been reported to Applied: the server must
// stop serving once Err is set.
//
// # The sync phase
//
// A ZooKeeper leader serializes a SNAP while it goes on applying writes,
// so the snapshot may already hold some of the transactions that follow
// it; and it resends from where its tree was when the sync began, which
// may be before the snapshot's zxid. From a Snapshot until UpToDate the
// mirror therefore applies transactions as ZooKeeper's own restore does,
// skipping what the snapshot already holds (transactions at or below the
// snapshot's zxid are accepted, in increasing order; those after it must
// follow it without a gap). UpToDate makes the result the tree, checked
// against the last transaction's digest (catchup.go). The checked apply
// above, and the Applied callback, run for the transactions after
// UpToDate. The protocol must call UpToDate once it has handed over every
// transaction the leader sent before UPTODATE. After a DIFF (no Snapshot)
// every transaction is checked.
//
// Truncate only accepts the zxid the State is at: the mirror keeps no
// history to go back to.
//
// The Applying callback, if set, runs before each transaction that
// Applied will report, with no lock held.
//
// # Serving clients
//
// Replica (replica.go) serves a State to a zkserverd server as a
// ZooKeeper observer serves its clients: reads from the State, writes and
// sessions through the ZooKeeper leader (Upstream, which *zab.Observer
// implements), each answered by the transaction that comes back for it.
package mirror
