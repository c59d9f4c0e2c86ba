package replication

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// slogHC adapts *slog.Logger to the hclog.Logger that hashicorp/raft
// requires, so raft's lines reach the same structured output as ours.
// Methods not overridden come from a null logger. With peers set, raft's
// repeated complaints about an unreachable member are left out
// (peerlog.go); every logger derived by With or Named shares it.
//
// singleVoter marks the logger of a standalone server: raft starts every
// member as a follower that elects itself after a heartbeat timeout, and
// warns "heartbeat timeout reached, starting election" (and, when storing
// its own vote outlasts the election timeout on a busy disk, "Election
// timeout reached, restarting election"). With no other member there is no
// leader to miss and no vote to lose, so those lines are informational
// there.
type slogHC struct {
	hclog.Logger
	l           *slog.Logger
	peers       *peerLog
	singleVoter bool
}

// electionStart is raft's warning when a follower stops waiting for a
// leader, electionRestart when a candidate's election timed out.
const (
	electionStart   = "heartbeat timeout reached, starting election"
	electionRestart = "Election timeout reached, restarting election"
)

// newHCLogger returns raft's logger over l, tagged component=raft.
func newHCLogger(l *slog.Logger) hclog.Logger {
	return &slogHC{Logger: hclog.NewNullLogger(), l: raftSlog(l)}
}

// newPeerHCLogger is newHCLogger with repeated complaints about one member
// rate-limited by peers; singleVoter is set for a standalone server.
func newPeerHCLogger(l *slog.Logger, peers *peerLog, singleVoter bool) hclog.Logger {
	return &slogHC{Logger: hclog.NewNullLogger(), l: raftSlog(l), peers: peers, singleVoter: singleVoter}
}

// raftSlog tags l's lines as raft's.
func raftSlog(l *slog.Logger) *slog.Logger { return l.With("component", "raft") }

func (h *slogHC) log(level slog.Level, msg string, args []interface{}) {
	if h.singleVoter && level == slog.LevelWarn && (msg == electionStart || msg == electionRestart) {
		level = slog.LevelInfo
	}
	if !h.l.Enabled(context.Background(), level) {
		return
	}
	for i, a := range args {
		// hclog.Fmt values are deferred Sprintf calls.
		if f, ok := a.(hclog.Format); ok && len(f) > 0 {
			if layout, ok := f[0].(string); ok {
				args[i] = fmt.Sprintf(layout, f[1:]...)
			}
		}
	}
	if h.peers != nil {
		h.peers.logLine(h.l, level, msg, args)
		return
	}
	h.l.Log(context.Background(), level, msg, args...)
}

func (h *slogHC) Log(level hclog.Level, msg string, args ...interface{}) {
	switch {
	case level >= hclog.Error:
		h.log(slog.LevelError, msg, args)
	case level == hclog.Warn:
		h.log(slog.LevelWarn, msg, args)
	case level == hclog.Info:
		h.log(slog.LevelInfo, msg, args)
	default:
		h.log(slog.LevelDebug, msg, args)
	}
}

func (h *slogHC) Trace(msg string, args ...interface{}) { h.log(slog.LevelDebug-4, msg, args) }
func (h *slogHC) Debug(msg string, args ...interface{}) { h.log(slog.LevelDebug, msg, args) }
func (h *slogHC) Info(msg string, args ...interface{})  { h.log(slog.LevelInfo, msg, args) }
func (h *slogHC) Warn(msg string, args ...interface{})  { h.log(slog.LevelWarn, msg, args) }
func (h *slogHC) Error(msg string, args ...interface{}) { h.log(slog.LevelError, msg, args) }

func (h *slogHC) IsTrace() bool { return h.l.Enabled(context.Background(), slog.LevelDebug-4) }
func (h *slogHC) IsDebug() bool { return h.l.Enabled(context.Background(), slog.LevelDebug) }
func (h *slogHC) IsInfo() bool  { return h.l.Enabled(context.Background(), slog.LevelInfo) }
func (h *slogHC) IsWarn() bool  { return h.l.Enabled(context.Background(), slog.LevelWarn) }
func (h *slogHC) IsError() bool { return h.l.Enabled(context.Background(), slog.LevelError) }

func (h *slogHC) With(args ...interface{}) hclog.Logger {
	return &slogHC{Logger: h.Logger, l: h.l.With(args...), peers: h.peers, singleVoter: h.singleVoter}
}

func (h *slogHC) Named(name string) hclog.Logger {
	return &slogHC{Logger: h.Logger, l: h.l.With("name", name), peers: h.peers, singleVoter: h.singleVoter}
}

func (h *slogHC) ResetNamed(name string) hclog.Logger { return h.Named(name) }
