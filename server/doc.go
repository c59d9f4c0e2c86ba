// Package server is zkserverd's client front: the listener, the connect
// handshake, the per-connection pipeline that keeps each session's requests
// in order, request dispatch (reads from the local tree, writes through
// replication, through the Replica interface declared here), watch and
// reply delivery, and the detection of four-letter words. The operator
// surfaces (their replies, AdminServer, /metrics, audit log) are package
// server/ops, plugged in as an Operator (operator.go).
//
// Each connection has three goroutines:
//
//	reader:    frames ─▶ decode ─▶ (write: build txn, Submit) ─▶ pipeline queue
//	completer: pipeline queue, in order ─▶ wait for the write's outcome or run
//	           the read now (unless it ran already) ─▶ outbox
//	writer:    outbox ─▶ socket (one writev per batch of frames)
//
// Because the completer handles items strictly in arrival order, a read waits
// only for the same session's earlier writes (per-session FIFO), and replies
// leave in request order. A write proposed while a few of the session's
// earlier reads are still queued has them run on the FSM goroutine just
// before it is applied, if the completer has not run them by then
// (pipeline_early.go). Watch notifications are put in the outbox by the
// replication hook while the tree's write lock is held, which is before any
// reply that could show the new state; the outbox holds them back behind the
// replies that must precede them.
package server
