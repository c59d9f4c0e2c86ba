package server

import (
	"fmt"
	"runtime/debug"
)

// Client input never stops the process. Every goroutine that runs code
// driven by one client's bytes (a connection's reader, completer and
// writer, and the handshake on the reader) defers recoverPanic: a panic
// there is recovered, logged once with its stack and the client's address,
// counted (connection_panics in mntr and /metrics), and ends that
// connection only. The session is not touched; the client reconnects and
// resumes it. The state machine's apply runs on replication's goroutines,
// never on these, so a panic there still stops the member.

// recoverPanic is deferred by a connection goroutine; where names it in
// the log. It must be the deferred function itself (recover only works
// there).
func (c *conn) recoverPanic(where string) {
	if v := recover(); v != nil {
		c.panicked(where, v)
	}
}

// panicked logs, counts and contains a recovered panic: the connection is
// aborted, which wakes every goroutine waiting on it.
func (c *conn) panicked(where string, v any) {
	c.s.stats.connPanics.Add(1)
	c.s.log.Error("panic while serving a client; closing its connection",
		"where", where, "remote", c.nc.RemoteAddr().String(), "session", hexID(c.sessionID.Load()),
		"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	c.abort("panic in " + where)
}

// guard runs fn, reporting false when it panicked (contained as above).
func (c *conn) guard(where string, fn func() bool) (ok bool) {
	defer c.recoverPanic(where)
	return fn()
}

// recoverCompleter is the completer's recoverPanic: after containing the
// panic it keeps taking pipeline items without running them until the
// reader's final nil, so that the reader never blocks on a full queue and
// the outstanding-request count comes back down.
func (c *conn) recoverCompleter() {
	v := recover()
	if v == nil {
		return
	}
	c.panicked("completer", v)
	for p := range c.pl.queue {
		if p == nil {
			return
		}
		c.finished(p)
	}
}

// taskPanicked is the worker pool's last line (workers.onPanic): a task
// that panicked past its own guards is logged and counted, and the pool
// goroutine stays usable.
func (s *Server) taskPanicked(v any) {
	s.stats.connPanics.Add(1)
	s.log.Error("panic in a connection goroutine", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
}
