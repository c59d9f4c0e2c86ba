package server

import (
	"context"
	"errors"
	"time"

	"github.com/zkserverd/zkserverd/replication"
)

// Leadership hand-off for rolling restarts: a leader that stops hands its
// leadership to an up-to-date follower first, so that the ensemble keeps
// committing instead of waiting for its followers' election timeout, as
// ZooKeeper's leader does not (its ensemble elects anew when the leader
// goes). The replication layer does the transfer
// (replication/transfer.go); this file is the server's side of it.

// TransferLeadership hands this member's leadership to another voting
// member: target, or the most up-to-date follower when target is 0. It
// returns the id of the new leader. It fails, leaving leadership where
// it was, when this member does not lead an ensemble or when no other
// member took over before ctx ended.
func (s *Server) TransferLeadership(ctx context.Context, target int64) (int64, error) {
	return s.node.TransferLeadership(ctx, target)
}

// HandOffAndClose is the server's stop on SIGTERM: a leader of an
// ensemble first hands its leadership over (TransferLeadership to any
// up-to-date member, for at most timeout; 0 turns the hand-off off), then
// the server closes. A hand-off that fails is logged and the server
// closes all the same; a standalone server and a follower just close.
func (s *Server) HandOffAndClose(timeout time.Duration) error {
	s.handOff(timeout)
	return s.Close()
}

// handOff is HandOffAndClose's transfer; it reports whether leadership
// moved.
func (s *Server) handOff(timeout time.Duration) bool {
	if !s.node.Clustered() || !s.node.IsLeader() {
		return false
	}
	if timeout <= 0 {
		s.log.Info("stopping without handing leadership over: the hand-off is turned off")
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	to, err := s.node.TransferLeadership(ctx, 0)
	switch {
	case errors.Is(err, replication.ErrNotLeader):
		return false // leadership moved by itself meanwhile
	case err != nil:
		s.log.Warn("stopping without handing leadership over", "err", err, "after", time.Since(start).Round(time.Millisecond))
		return false
	}
	s.log.Info("handed leadership over before stopping", "to", to, "took", time.Since(start).Round(time.Millisecond))
	return true
}
