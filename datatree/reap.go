package datatree

import (
	"slices"

	"github.com/zkserverd/zkserverd/jute"
)

// Container and TTL reaping. The decision to reap is made
// by the leader's reaper with ReapCandidates and travels through the log as
// an OpDeleteContainer transaction; Apply re-checks it against the
// transaction's own Time, so a node that got a child or, for a TTL node, was
// modified since the reaper looked is kept, on every replica alike.

// NotReapable is the code of an OpDeleteContainer whose node exists and has
// no children but may not be reaped: a normal ephemeral (ZooKeeper's code
// for that case), a persistent node, or a TTL node whose ttl has not passed
// since its last modification at the transaction's time.
const NotReapable = jute.BadVersion

// ReapCandidates returns, sorted, at most limit (limit <= 0: no limit)
// paths to reap at now (ms since the epoch): childless containers that have
// had a child (stored cversion > 0) or, when maxNeverUsed > 0, that never
// had one and were last modified more than maxNeverUsed ms ago; and
// childless TTL nodes last modified more than their ttl ago. It takes the
// read lock.
func (t *Tree) ReapCandidates(now, maxNeverUsed int64, limit int) []string {
	t.mu.RLock()
	var out []string
	for _, index := range []map[string]struct{}{t.containers, t.ttls} {
		for p := range index {
			if n := t.lookup(p); n != nil && reapable(n, now, maxNeverUsed) {
				out = append(out, p)
			}
		}
	}
	t.mu.RUnlock()
	slices.Sort(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// reapable reports whether the reaper should propose n's deletion at now.
func reapable(n *node, now, maxNeverUsed int64) bool {
	if n.kids.len() > 0 {
		return false
	}
	switch n.kind() {
	case kindContainer:
		if n.cversion > 0 {
			return true
		}
		return maxNeverUsed > 0 && now-n.mtime > maxNeverUsed
	case kindTTL:
		return ttlExpired(n, now)
	}
	return false
}

// ttlExpired reports whether the TTL node n was last modified more than its
// ttl before now.
func ttlExpired(n *node, now int64) bool {
	ttl := n.owner &^ jute.TTLOwnerMask
	return ttl > 0 && now-n.mtime > ttl
}

// reapCheck is Apply's re-check of a reaper delete of the childless node n
// at the transaction's time now. A container qualifies whether or not it
// ever had a child: the never-used interval is a member's local setting,
// not replicated state, so the proposer's judgement of it is trusted.
func reapCheck(n *node, now int64) jute.Code {
	switch n.kind() {
	case kindContainer:
		return jute.OK
	case kindTTL:
		if ttlExpired(n, now) {
			return jute.OK
		}
	}
	return NotReapable
}
