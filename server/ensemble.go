package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/peernet"
	"github.com/zkserverd/zkserverd/replication"
)

// peersOf turns zoo.cfg server.N lines into replication peers (none for a
// standalone server).
func peersOf(cfg conf.Config) []replication.Peer {
	if !cfg.Distributed() {
		return nil
	}
	peers := make([]replication.Peer, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		peers = append(peers, peerOf(s))
	}
	return peers
}

// peerOf maps one server line: the quorum port carries raft, the election
// port carries write forwarding.
func peerOf(s conf.Server) replication.Peer {
	return replication.Peer{
		ID:          s.ID,
		RaftAddr:    net.JoinHostPort(s.Host, strconv.Itoa(s.PeerPort)),
		ForwardAddr: net.JoinHostPort(s.Host, strconv.Itoa(s.ElectionPort)),
		Observer:    s.Observer,
	}
}

// memberNetwork secures the links between members when the configuration
// asks for TLS or SASL there (package peernet); nil means plain TCP.
func memberNetwork(cfg conf.Config, logger *slog.Logger) (replication.Network, error) {
	if !cfg.Distributed() || !peernet.Enabled(cfg) {
		return nil, nil
	}
	n, err := peernet.New(cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("server: member links: %w", err)
	}
	return n, nil
}

// dynamicConfigText is /zookeeper/config's data on an ensemble member:
// one server line per member and the config version, "\n"-separated with
// no trailing newline, as ZooKeeper writes it.
func dynamicConfigText(cfg conf.Config) []byte {
	if !cfg.Distributed() {
		return nil
	}
	dc := dynamicConfig{servers: make(map[int64]conf.Server, len(cfg.Servers))}
	for _, s := range cfg.Servers {
		dc.servers[s.ID] = s
	}
	return append(dc.lines(), "version="+strconv.FormatInt(cfg.ConfigVersion, 16)...)
}

// toucher collects the sessions that showed activity on this member and
// reports them to the leader in batches (every half tick), as ZooKeeper's
// learners do with their pings. mu guards pending.
type toucher struct {
	mu      sync.Mutex
	pending map[int64]struct{}
}

func (t *toucher) add(id int64) {
	t.mu.Lock()
	if t.pending == nil {
		t.pending = make(map[int64]struct{})
	}
	t.pending[id] = struct{}{}
	t.mu.Unlock()
}

func (t *toucher) take() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]int64, 0, len(t.pending))
	for id := range t.pending {
		ids = append(ids, id)
	}
	t.pending = nil
	return ids
}

// touch records activity of session sid. The leader (and a standalone
// server) refreshes its expiry clock at once; other members batch. A local
// session of the read-only server (readonly.go) is refreshed here.
func (s *Server) touch(sid int64) {
	if sid == 0 || s.touchLocal(sid) {
		return
	}
	if !s.node.Clustered() || s.node.IsLeader() {
		s.tracker.Touch(sid)
		return
	}
	s.touches.add(sid)
}

// reportTouches sends the batched liveness reports to the leader until ctx
// ends. Sessions connected here are reported every round even when idle
// only if they sent something; clients ping at a third of their timeout.
func (s *Server) reportTouches(ctx context.Context) {
	tick := time.NewTicker(time.Duration(s.cfg.TickTime) * time.Millisecond / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.node.Touch(s.touches.take())
		}
	}
}

// followLeadership restarts the expiry clock of every session when this
// member becomes leader: a new leader gives every session a full timeout
// before expiring any, since it has not seen their recent touches.
func (s *Server) followLeadership(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case leading := <-s.node.LeaderCh():
			if leading {
				s.log.Info("leading the ensemble; restarting session expiry clocks")
				s.restartSessionClocks()
			} else {
				s.log.Info("no longer leading")
			}
		}
	}
}

// restartSessionClocks gives every known session a fresh full timeout.
func (s *Server) restartSessionClocks() {
	for _, info := range s.node.Sessions().All() {
		s.tracker.Add(info.ID, time.Duration(info.Timeout)*time.Millisecond)
	}
}

// superviseServing opens the doors to clients once the replicated state is
// current, and closes them again (dropping every client connection, as a
// ZooKeeper member does when it loses its leader) whenever this member is
// not in a working quorum (servingTrouble), so that clients see
// Disconnected at once and nobody reads from a member cut off from the
// quorum. It checks every half tick, and at once when the forwarding
// connection to the leader breaks.
func (s *Server) superviseServing(ctx context.Context) {
	check := time.NewTicker(time.Duration(s.cfg.TickTime) * time.Millisecond / 2)
	defer check.Stop()
	for ctx.Err() == nil {
		s.waitServing(ctx)
		var trouble error
		for ctx.Err() == nil && trouble == nil {
			select {
			case <-ctx.Done():
			case <-check.C:
			case <-s.node.LeaderLinkLost():
			}
			trouble = s.servingTrouble()
		}
		if ctx.Err() != nil {
			return
		}
		s.serving.Store(false)
		s.log.Warn("not in a working quorum; not serving until one is back", "reason", trouble)
		for _, c := range s.connections() {
			c.abort("member left the quorum")
		}
	}
}

// servingTrouble is the one place that decides whether this ensemble
// member may keep serving clients: it says why not, nil while it may. A
// member serves while it is in a working quorum: it leads, or it follows a
// leader it heard from within syncLimit ticks over a working forwarding
// connection. While it may not, waitServing decides about read-only mode.
func (s *Server) servingTrouble() error {
	return s.node.QuorumHealth(s.syncLimit())
}

// syncLimit is how long a member may go without hearing from its leader,
// and how long it may take to catch up with it: syncLimit ticks (at least
// one).
func (s *Server) syncLimit() time.Duration {
	return time.Duration(max(s.cfg.SyncLimit, 1)*s.cfg.TickTime) * time.Millisecond
}

// waitServing marks the server ready once the replicated state is current,
// retrying while there is no quorum. With readonlymode.enabled, a member
// that waits longer than readOnlyDelay serves read-only clients meanwhile,
// until it has a quorum again (readonly.go).
func (s *Server) waitServing(ctx context.Context) {
	stopReadOnly := s.startReadOnlyTimer(ctx)
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.node.WaitReady(wctx)
		cancel()
		if err == nil {
			stopReadOnly() // read-only clients are gone before read-write ones come
			s.markServing()
			return
		}
		s.log.Info("waiting for a quorum", "err", err)
	}
	stopReadOnly()
}

// markServing sets the config node and opens the doors to clients.
func (s *Server) markServing() {
	// The configuration files seed /zookeeper/config once; after that it is
	// replicated state that reconfig changes.
	if data, _, _ := s.node.Tree().GetData(configPath, nil, nil); len(data) == 0 {
		if text := dynamicConfigText(s.cfg); text != nil {
			s.node.Tree().SetConfigNode(text, 0, time.Now().UnixMilli())
		}
	} else {
		s.learnConfig(data)
	}
	s.serving.Store(true)
	s.log.Info("serving clients", "mode", s.node.Role(), "zxid", hexID(s.node.LastZxid()))
}
