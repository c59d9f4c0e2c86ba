// Package datatree is the znode tree with Apache ZooKeeper 3.8's exact
// semantics: stat bookkeeping, versions, sequential names, ephemeral,
// container and TTL nodes, ACL validation order, multi as all-or-nothing,
// watch triggers and snapshots. It is the data of the replicated state
// machine: every replica applies the same decided transactions in the same
// order and ends in byte-identical state.
//
// The caller's loop:
//
//  1. Build a Txn for each decided write (the proposer sets Time and the
//     caller's IDs) and call Apply with the write's zxid, in log order.
//     Failed writes are applied too: they consume their zxid and come back
//     with Result.Err set.
//  2. In the Apply hook (run under the tree's write lock), hand
//     Result.Events to the watch registry and wake the request's waiter.
//  3. Serve reads with Exists, GetData, GetChildren, GetACL, ... at any
//     time; their watch callbacks run under the read lock, so a watch
//     registered by a read fires for exactly the writes applied after it.
//  4. Persist the state: capture it with Snapshot between two applies (it
//     costs nothing per znode), write it with Snapshot.WriteTo on another
//     goroutine while applies go on, then Release it (cow.go). Restore it
//     with ReadSnapshot. WriteSnapshot does all three at once.
//
// The tree keeps each znode in one 96-byte node with its name, not its
// path, and each directory's children in a compact hash set (kids.go):
// about 250 bytes of heap per znode with 100 bytes of data.
//
// Apply is deterministic: no clocks, no randomness, no I/O, no goroutines;
// every iteration whose order shows in the result or the state is sorted.
// ZooKeeper errors decided at apply time are jute.Code values, never Go
// errors. Reaping is split as the replicated write path requires: the
// leader's reaper asks ReapCandidates (from the container and TTL indexes)
// and proposes OpDeleteContainer transactions, and Apply re-checks each one
// at the transaction's own time, keeping a node that changed meanwhile.
// Quota statistics (/zookeeper/quota/<path>/zookeeper_stats) are kept current
// inside Apply, deterministically, and hard limits are enforced when
// Config.EnforceQuota is set. ReadSnapshot keeps the stats a snapshot
// holds; a Loader recounts them from its tree (RecomputeQuotaStats).
//
// Digest returns a 64-bit digest of the whole tree that members compare to
// find a diverged replica. It is the sum, mod 2^64, over every node of an
// XXH64-based hash of the node's full path, its data (a null buffer and
// empty data differ), every stored stat field (czxid, mzxid, pzxid, ctime,
// mtime, version, stored cversion, aversion, the stored ephemeralOwner and
// the kind), its number of children and the content of its ACL list (perms,
// scheme and id of each entry, in order), never the member-local ACL id;
// digest.go gives the exact layout. Trees with the same content have the
// same digest however they were built: by applies in any order, by
// ReadSnapshot or by a Loader. Every write keeps it up to date, so reading
// it is O(1); ComputeDigest recomputes it from scratch.
package datatree
