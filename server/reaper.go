package server

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// The container and TTL reaper, ZooKeeper's ContainerManager: every
// znode.container.checkIntervalMs (the first time one interval after
// start) the leader, or a standalone server, asks the tree for candidates
// and proposes one deleteContainer transaction (session 0) for each, at
// most znode.container.maxPerMinute a minute. Apply re-checks each against
// the transaction's time (datatree.ReapCandidates, reapCheck), so the
// decision is replicated and a node that changed meanwhile is kept. The
// same loop logs the quota warnings the tree counted since the last check.

// reapNode is what the reaper needs from the replicated state, the part of
// Replica it uses (its tests give it a fake).
type reapNode interface {
	Clustered() bool
	IsLeader() bool
	Tree() *datatree.Tree
	Submit(t *txnlog.Txn) <-chan replication.Outcome
}

var _ reapNode = Replica(nil)

// reaper runs on one goroutine; its fields need no lock.
type reaper struct {
	node         reapNode
	clock        session.Clock
	log          *slog.Logger
	interval     time.Duration
	maxNeverUsed int64 // ms; 0 keeps never-used containers forever
	limit        reapLimiter
	warnings     uint64 // quota warnings already logged
}

// newReaper configures a reaper from zoo.cfg's znode.container.* keys.
func newReaper(node reapNode, cfg conf.Config, clock session.Clock, log *slog.Logger) *reaper {
	interval := time.Duration(cfg.ContainerCheckIntervalMs) * time.Millisecond
	if interval <= 0 {
		interval = time.Minute
	}
	return &reaper{
		node:         node,
		clock:        clock,
		log:          log,
		interval:     interval,
		maxNeverUsed: cfg.ContainerMaxNeverUsedIntervalMs,
		limit:        reapLimiter{perMinute: max(cfg.ContainerMaxPerMinute, 1)},
	}
}

// runReaper runs the reaper until ctx ends, on the real clock unless
// WithReaperClock set another.
func (s *Server) runReaper(ctx context.Context) {
	r := newReaper(s.node, s.cfg, s.reaperClock, s.log)
	s.log.Info("container reaper started", "checkIntervalMs", r.interval.Milliseconds(),
		"maxPerMinute", r.limit.perMinute, "maxNeverUsedIntervalMs", r.maxNeverUsed)
	r.run(ctx)
}

// run checks once per interval until ctx ends.
func (r *reaper) run(ctx context.Context) {
	tk := r.clock.NewTicker(r.interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C():
			r.check(ctx)
		}
	}
}

// check is one pass: log quota warnings, then, on the leader, propose the
// candidates the rate limit allows and wait for their outcomes. It returns
// the number of nodes reaped.
func (r *reaper) check(ctx context.Context) int {
	tree := r.node.Tree()
	r.logQuotaWarnings(tree)
	if r.node.Clustered() && !r.node.IsLeader() {
		return 0
	}
	now := r.clock.Now()
	budget := r.limit.available(now)
	if budget == 0 {
		return 0
	}
	paths := tree.ReapCandidates(now.UnixMilli(), r.maxNeverUsed, budget)
	r.limit.spend(len(paths))
	outcomes := make([]<-chan replication.Outcome, len(paths))
	for i, p := range paths {
		r.log.Info("attempting to delete candidate container", "path", p)
		outcomes[i] = r.node.Submit(&txnlog.Txn{Tree: datatree.Txn{
			Type: jute.OpDeleteContainer, Request: &jute.PathRequest{Path: p}}})
	}
	reaped := 0
	for i, ch := range outcomes {
		select {
		case o := <-ch:
			if r.logOutcome(paths[i], o) {
				reaped++
			}
		case <-ctx.Done():
			return reaped
		}
	}
	return reaped
}

// logOutcome logs one proposal's fate and reports whether the node went.
func (r *reaper) logOutcome(path string, o replication.Outcome) bool {
	switch {
	case o.Err != nil:
		r.log.Warn("could not delete container", "path", path, "err", o.Err)
		return false
	case o.Result.Err != jute.OK:
		// Changed since the candidates were taken; kept.
		r.log.Info("container kept", "path", path, "zxid", hexID(o.Zxid), "err", o.Result.Err.String())
		return false
	}
	r.log.Info("deleted container", "path", path, "zxid", hexID(o.Zxid))
	return true
}

// logQuotaWarnings logs the quota warnings counted since the last check in
// one line (ZooKeeper rate-limits its "Quota exceeded" line too).
func (r *reaper) logQuotaWarnings(tree *datatree.Tree) {
	total, last := tree.QuotaWarnings()
	if total < r.warnings {
		r.warnings = 0 // the tree was replaced from a snapshot
	}
	if total == r.warnings {
		return
	}
	what := "count"
	if last.Bytes {
		what = "bytes"
	}
	r.log.Warn("quota exceeded", "times", total-r.warnings, "path", last.Root,
		"what", what, "value", last.Value, "limit", last.Limit, "hard", last.Hard)
	r.warnings = total
}

// reapLimiter is a token bucket holding up to perMinute deletions and
// refilled at perMinute per minute of clock time, so that no more than about
// maxPerMinute containers go in any minute (ZooKeeper instead sleeps
// 60000/maxPerMinute ms between deletions within a pass).
type reapLimiter struct {
	perMinute int
	tokens    float64
	last      time.Time
}

// available refills the bucket up to now and returns the whole tokens.
func (l *reapLimiter) available(now time.Time) int {
	full := float64(l.perMinute)
	if l.last.IsZero() {
		l.tokens = full
	} else if d := now.Sub(l.last); d > 0 {
		l.tokens = min(full, l.tokens+d.Minutes()*full)
	}
	if now.After(l.last) {
		l.last = now
	}
	return int(l.tokens)
}

// spend takes n tokens.
func (l *reapLimiter) spend(n int) { l.tokens -= float64(n) }

// enforceQuota reads zookeeper.enforceQuota, kept in Config.Extra under the
// key as written in zoo.cfg (enforceQuota or zookeeper.enforceQuota), with
// Java's Boolean.parseBoolean: only "true", in any case, is true.
func enforceQuota(cfg conf.Config) bool {
	for _, k := range []string{"zookeeper.enforceQuota", "enforceQuota"} {
		if v, ok := cfg.Extra[k]; ok {
			return strings.EqualFold(v, "true")
		}
	}
	return false
}
