package server

import (
	"log/slog"
	"path/filepath"
	"sort"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/watch"
)

// This file is the server's read-only view for the operator surfaces
// (Operator): its configuration, role, statistics and connections. Each
// method is safe to call from any goroutine once Start has run.

// Config returns the server's configuration.
func (s *Server) Config() conf.Config { return s.cfg }

// Logger returns the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// Serving reports whether the server serves clients read-write (a quorum
// is reached and the state caught up).
func (s *Server) Serving() bool { return s.serving.Load() }

// ReadOnly reports whether the read-only server runs (readonlymode.enabled
// without a quorum).
func (s *Server) ReadOnly() bool { return s.readOnly() }

// Mode is the server's role as srvr's Mode line and mntr's zk_server_state
// show it: read-only while the read-only server runs.
func (s *Server) Mode() string { return s.mode() }

// mode is Mode.
func (s *Server) mode() string {
	if s.readOnly() {
		return "read-only"
	}
	return s.node.Role()
}

// Started returns when the client port opened.
func (s *Server) Started() time.Time { return s.started }

// Replica returns the replicated state the server serves from.
func (s *Server) Replica() Replica { return s.node }

// Watches returns this member's watch registry.
func (s *Server) Watches() *watch.Registry { return s.watches }

// DataDirs returns the snapshot and transaction log directories as the
// server uses them (dataDir and dataLogDir with "version-2" appended).
func (s *Server) DataDirs() (snap, txnLog string) {
	return filepath.Join(s.dataDir, "version-2"), filepath.Join(s.logDir, "version-2")
}

// SessionExpiry returns the expiry tracker's buckets: each deadline with
// the sessions that expire then.
func (s *Server) SessionExpiry() map[time.Time][]int64 { return s.tracker.Buckets() }

// LocalSessionCount is the number of the read-only server's local sessions
// (mntr's zk_local_sessions).
func (s *Server) LocalSessionCount() int { return s.localSessionCount() }

// Stats returns the server-wide counters of srvr, stat and mntr.
func (s *Server) Stats() Stats {
	st := s.stats.get()
	st.Memory = s.memory.stats() // memlimit.go
	return st
}

// ResetStats resets the server-wide counters (srst).
func (s *Server) ResetStats() { s.stats.reset() }

// ConnectionStats describes one client connection as cons shows it.
type ConnectionStats struct {
	Remote      string // the client's address
	Secure      bool   // accepted on secureClientPort (not a unified clientPort)
	SessionID   int64  // 0 before the session is established
	Queued      int    // requests in the pipeline
	Received    int64  // packets received
	Sent        int64  // packets sent
	HasLastOp   bool   // LastOp is set (a request was answered since the last reset)
	LastOp      jute.OpCode
	Established time.Time
	Timeout     int32 // negotiated session timeout, ms
	LastCxid    int32
	LastZxid    int64
	LastResp    int64 // ms since the epoch
	LastLatency int64 // ms
	Latency     LatencyStats
}

// Connections describes every client connection, oldest first.
func (s *Server) Connections() []ConnectionStats {
	cs := s.connections()
	sort.Slice(cs, func(i, j int) bool { return cs[i].established.Before(cs[j].established) })
	out := make([]ConnectionStats, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.stats())
	}
	return out
}

// ResetConnectionStats resets every connection's counters (crst).
func (s *Server) ResetConnectionStats() {
	for _, c := range s.connections() {
		c.resetStats()
	}
}

// stats reads the connection's counters.
func (c *conn) stats() ConnectionStats {
	sc, secure := c.nc.(*secureConn)
	return ConnectionStats{
		Remote:      c.nc.RemoteAddr().String(),
		Secure:      secure && !sc.unified,
		SessionID:   c.sessionID.Load(),
		Queued:      len(c.pl.queue),
		Received:    c.recv.Load(),
		Sent:        c.sent.Load(),
		HasLastOp:   c.everOp.Load(),
		LastOp:      jute.OpCode(c.lastOp.Load()),
		Established: c.established,
		Timeout:     c.timeout.Load(),
		LastCxid:    c.lastCxid.Load(),
		LastZxid:    c.lastZxid.Load(),
		LastResp:    c.lastResp.Load(),
		LastLatency: c.lastLatency.Load(),
		Latency:     c.lat.get(),
	}
}

// resetStats resets the connection's counters.
func (c *conn) resetStats() {
	c.recv.Store(0)
	c.sent.Store(0)
	c.lat.reset()
	c.everOp.Store(false)
	c.lastCxid.Store(0)
	c.lastZxid.Store(0)
	c.lastResp.Store(0)
	c.lastLatency.Store(0)
}
