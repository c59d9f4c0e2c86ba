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
//	           the read now ─▶ outbox
//	writer:    outbox ─▶ socket (one writev per batch of frames)
//
// Because the completer handles items strictly in arrival order, a read waits
// only for the same session's earlier writes (per-session FIFO), and replies
// leave in request order. Watch notifications are put in the outbox by the
// replication hook while the tree's write lock is held, which is before any
// reply that could show the new state.
package server
