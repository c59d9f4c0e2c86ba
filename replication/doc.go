// Package replication carries every state change of zkserverd through a
// hashicorp/raft log and applies it, in log order, to the znode tree and the
// session table.
//
// A Node owns the raft instance (raft-boltdb on bbolt as log and stable
// store, a file snapshot store), the FSM, a group-commit batcher and the
// waiters of in-flight proposals:
//
//	server ──Submit(txn)──▶ batcher ──raft.Apply(entry)──▶ log (fsync) ──▶ FSM.Apply
//	                                                               │
//	    ◀──────── Outcome (zxid, result) ◀── waiter ◀── hook (under the tree lock)
//
// The FSM is the only writer of replicated state. For each transaction of an
// entry it derives the next zxid from the entry's term (the epoch; always 0
// for a standalone server), applies the transaction to the tree, and, still
// under the tree's write lock, calls the Observer (watch delivery) and then
// wakes the proposer's waiter, so a reply never overtakes the notifications
// its write caused. Time comes from the entry, never from the applying
// member's clock.
package replication
