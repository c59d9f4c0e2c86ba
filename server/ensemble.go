package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/peernet"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/txnlog"
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
				if s.serving.Load() && len(s.configData()) == 0 {
					s.seedConfig()
				}
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
// ZooKeeper member does when it loses its leader) whenever servingTrouble
// says this member may not serve, so that clients see Disconnected at once
// and nobody reads from a member cut off from the quorum or fenced. It
// checks every half tick, and at once when the forwarding connection to
// the leader breaks. A standalone server runs it too: its quorum is itself,
// but it can be fenced.
func (s *Server) superviseServing(ctx context.Context) {
	check := time.NewTicker(s.checkPeriod())
	defer check.Stop()
	for ctx.Err() == nil {
		if !s.serving.Load() {
			s.waitServing(ctx)
		}
		trouble := s.awaitTrouble(ctx, check.C)
		if ctx.Err() != nil {
			return
		}
		s.stopServing(trouble)
	}
}

// awaitTrouble returns servingTrouble's first complaint, checking at each
// tick of check and when the link to the leader breaks.
func (s *Server) awaitTrouble(ctx context.Context, check <-chan time.Time) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-check:
		case <-s.node.LeaderLinkLost():
		}
		if trouble := s.servingTrouble(); trouble != nil {
			return trouble
		}
	}
}

// stopServing closes the doors: no new session, and every client
// connection dropped. A lost quorum is logged here as a warning (it is
// expected to heal); a fence is logged at ERROR by waitUnfenced, where the
// member goes next.
func (s *Server) stopServing(trouble error) {
	s.serving.Store(false)
	reason := "member fenced"
	if !errors.Is(trouble, errFenced) {
		reason = "member left the quorum"
		s.log.Warn("not in a working quorum; not serving until one is back", "reason", trouble)
	}
	for _, c := range s.connections() {
		c.abort(reason)
	}
}

// errFenced marks servingTrouble's answer for a fenced member.
var errFenced = errors.New("server: fenced")

// servingTrouble is the one place that decides whether this member may
// keep serving clients: it says why not, nil while it may. A fenced member
// (its tree differs from the ensemble's, or its data belongs to another
// ensemble: replication's Fenced) serves nobody, not even read-only
// clients. Otherwise a member serves while it is in a working quorum: it
// leads, or it follows a leader it heard from within syncLimit ticks over
// a working forwarding connection. While it may not, waitServing decides
// about read-only mode.
func (s *Server) servingTrouble() error {
	if err := s.node.Fenced(); err != nil {
		return fmt.Errorf("%w: %w", errFenced, err)
	}
	return s.node.QuorumHealth(s.syncLimit())
}

// checkPeriod is how often the serving supervisor looks: half a tick.
func (s *Server) checkPeriod() time.Duration {
	return time.Duration(s.cfg.TickTime) * time.Millisecond / 2
}

// syncLimit is how long a member may go without hearing from its leader,
// and how long it may take to catch up with it: syncLimit ticks (at least
// one).
func (s *Server) syncLimit() time.Duration {
	return time.Duration(max(s.cfg.SyncLimit, 1)*s.cfg.TickTime) * time.Millisecond
}

// waitServing marks the server ready once it is not fenced and the
// replicated state is current, retrying while there is no quorum.
func (s *Server) waitServing(ctx context.Context) {
	for ctx.Err() == nil {
		s.waitUnfenced(ctx)
		if s.catchUp(ctx) {
			return
		}
	}
}

// waitUnfenced returns at once when this member is not fenced. A fenced
// member logs why, at ERROR, and waits until the fence is lifted or ctx
// ends, serving nobody meanwhile.
func (s *Server) waitUnfenced(ctx context.Context) {
	fenced := s.node.Fenced()
	if fenced == nil {
		return
	}
	s.log.Error("fenced: this member's data disagrees with the ensemble's; serving no client", "reason", fenced)
	tick := time.NewTicker(s.checkPeriod())
	defer tick.Stop()
	for fenced != nil {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		fenced = s.node.Fenced()
	}
	s.log.Info("fence lifted")
}

// catchUp waits until the replicated state is current and opens the doors
// (true). With readonlymode.enabled, a member that waits longer than
// readOnlyDelay serves read-only clients meanwhile (readonly.go). It gives
// up (false) when ctx ends or this member is fenced, ending read-only mode
// first: a fenced member serves nobody.
func (s *Server) catchUp(ctx context.Context) bool {
	fctx, cancel := s.untilFenced(ctx)
	defer cancel()
	stopReadOnly := s.startReadOnlyTimer(fctx)
	defer stopReadOnly()
	for fctx.Err() == nil {
		wctx, cancelWait := context.WithTimeout(fctx, 5*time.Second)
		err := s.node.WaitReady(wctx)
		cancelWait()
		switch {
		case err == nil && s.node.Fenced() == nil:
			stopReadOnly() // read-only clients are gone before read-write ones come
			s.markServing()
			return true
		case err == nil:
			return false
		case fctx.Err() == nil:
			s.log.Info("waiting for a quorum", "err", err)
		}
	}
	return false
}

// untilFenced returns a context that ends with ctx, or when this member is
// fenced (checked every half tick).
func (s *Server) untilFenced(ctx context.Context) (context.Context, context.CancelFunc) {
	fctx, cancel := context.WithCancel(ctx)
	go func() {
		tick := time.NewTicker(s.checkPeriod())
		defer tick.Stop()
		for s.node.Fenced() == nil {
			select {
			case <-fctx.Done():
				return
			case <-tick.C:
			}
		}
		cancel()
	}()
	return fctx, cancel
}

// markServing opens the doors to clients. The configuration files seed
// /zookeeper/config once, through the log (seedConfig); after that it is
// replicated state that reconfig changes, and each member learns its
// server lines from it.
func (s *Server) markServing() {
	data := s.configData()
	if len(data) > 0 {
		s.learnConfig(data)
	}
	s.serving.Store(true)
	s.servedOnce.Store(true)
	s.log.Info("serving clients", "mode", s.node.Role(), "zxid", hexID(s.node.LastZxid()))
	if len(data) == 0 {
		s.seedConfig()
	}
}

// configData is /zookeeper/config's data in the local tree.
func (s *Server) configData() []byte {
	data, _, _ := s.node.Tree().GetData(configPath, nil, nil)
	return data
}

// seedConfig has the leader of an ensemble propose the configuration
// files' server lines as /zookeeper/config's first value: an OpInitConfig
// transaction of the server's own (session 0, as the reaper's), which
// every member applies from the log, and only while the node is still
// empty, so a second seed changes nothing. The apply hook learns the
// applied text (observer.go). Followers and a standalone server propose
// nothing; a new leader seeds again if the node is still empty
// (followLeadership).
func (s *Server) seedConfig() {
	text := dynamicConfigText(s.cfg)
	if text == nil || !s.node.IsLeader() {
		return
	}
	ch := s.node.Submit(&txnlog.Txn{Tree: datatree.Txn{Type: txnlog.OpInitConfig,
		Request: &jute.SetDataRequest{Path: configPath, Data: text, Version: -1}}})
	s.goAndTrack(func() {
		select {
		case out := <-ch:
			if out.Err != nil {
				s.log.Warn("/zookeeper/config not seeded; the next leader will", "err", out.Err)
			}
		case <-s.ctx.Done():
		}
	})
}
