// Package replication carries every state change of zkserverd through a
// hashicorp/raft log and applies it, in log order, to the znode tree and the
// session table.
//
// A Node owns the raft instance (raft-wal or raft-boltdb as log and stable
// store, a file snapshot store), the FSM, a group-commit batcher and the
// waiters of in-flight proposals. A write reads top to bottom:
//
//	server ──Submit(txn)──▶ batcher ──raft.Apply(entry)──▶ log (fsync) ──▶ FSM.Apply
//	                                                               │
//	    ◀──────── Outcome (zxid, result) ◀── waiter ◀── hook (under the tree lock)
//
// A follower's batcher forwards its batch to the leader (forward.go), whose
// batcher puts it into the leader's entries; the follower's waiters fire
// when its own FSM applies the entry. Replication stays inside raft's public
// contract: the log store is durable when StoreLogs returns, raft's
// transport carries only raft's messages (with its pipelining turned off,
// node_transport.go), and every member learns commits from raft and
// applies what raft hands its FSM. After the last write of a burst an idle
// leader appends a barrier whose append tells the followers the commit
// (nudge.go); raft's CommitTimeout is the fallback.
//
// The FSM is the only writer of replicated state. It decodes each entry; for
// each transaction it tells the Observer it is about to apply it (the
// proposer may read the state first), derives the next zxid from the
// entry's term (the epoch; always 0 for a standalone server), applies the transaction to the
// tree, and, still under the tree's write lock, calls the Observer (watch
// delivery) and then wakes the proposer's waiter, so a reply never overtakes
// the notifications its write caused. Time comes from the entry, never from
// the applying member's clock.
package replication
