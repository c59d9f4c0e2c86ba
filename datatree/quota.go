package datatree

import (
	"slices"
	"strconv"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// Quotas, in the layout ZooKeeper 3.7+ and its zkCli setquota use. A quota
// on the path P is a pair of ordinary znodes:
//
//	/zookeeper/quota<P>/zookeeper_limits  written by clients, e.g.
//	    "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=10"
//	/zookeeper/quota<P>/zookeeper_stats   kept by the server: "count=N,bytes=M"
//
// P "has a quota" while its limits node exists. Every create, delete and
// setData of P or of a node below it updates the stats node of the deepest
// such P (ZooKeeper's getMaxPrefixWithQuota): count is the number of nodes
// (P itself included), bytes the sum of their data lengths. The stats node's
// data is replaced in place, without a zxid, version, mtime or watch event,
// as ZooKeeper's DataTree.updateQuotaStat does; creating the stats node
// recomputes the subtree's usage. Everything is derived from the tree's
// nodes, so a snapshot carries the quota state and nothing is rebuilt when
// one is read. A tree from elsewhere (a Loader's: an import from
// ZooKeeper) has its stats recounted (RecomputeQuotaStats), as ZooKeeper
// recounts them when it loads.
//
// Limits: "count" and "bytes" are soft limits, "countHardLimit" and
// "byteHardLimit" hard ones; -1 or absence means none, and a hard limit
// replaces the soft one of its kind. A create or setData that would take the
// stats over a limit is reported in Result.QuotaWarnings; over a hard limit
// with Config.EnforceQuota it fails with QuotaExceeded, where ZooKeeper
// checks it: after a create's other checks, and in setData.

// Names of the quota nodes.
const (
	quotaLimitsName = "zookeeper_limits"
	quotaStatsName  = "zookeeper_stats"
)

// Keys of the quota text (ZooKeeper's StatsTrack).
const (
	quotaCount          = "count"
	quotaBytes          = "bytes"
	quotaCountHardLimit = "countHardLimit"
	quotaByteHardLimit  = "byteHardLimit"
)

// QuotaWarning reports a write that takes a quota's subtree over one of its
// limits. ZooKeeper logs these ("Quota exceeded: ...").
type QuotaWarning struct {
	// Root is the path the quota is set on.
	Root string
	// Bytes is set when the bytes limit was exceeded, else it is the count.
	Bytes bool
	// Value is the count or byte total the write would reach.
	Value int64
	// Limit is the limit it goes over.
	Limit int64
	// Hard is set for a hard limit: the write was rejected with
	// QuotaExceeded if quotas are enforced, and let through otherwise.
	Hard bool
}

// quotaWarnings counts the warnings of every applied write, for a server
// that logs them now and then. Guarded by Tree.mu.
type quotaWarnings struct {
	total uint64
	last  QuotaWarning
}

// QuotaWarnings returns how many quota warnings writes have produced since
// the tree was created or loaded, and the latest one.
func (t *Tree) QuotaWarnings() (total uint64, last QuotaWarning) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.quotaWarn.total, t.quotaWarn.last
}

// recordQuotaWarnings adds an applied write's warnings to the counters.
func (t *Tree) recordQuotaWarnings(ws []QuotaWarning) {
	if len(ws) == 0 {
		return
	}
	t.quotaWarn.total += uint64(len(ws))
	t.quotaWarn.last = ws[len(ws)-1]
}

// statsTrack is the parsed text of a limits or stats node: key=value pairs
// separated by runs of ',' or ';'. A missing key reads as -1.
type statsTrack map[string]int64

// parseStatsTrack parses quota text as ZooKeeper's StatsTrack does: each
// pair is split on '=' (trailing empty parts dropped, so "bytes=5=" is
// bytes 5) and an empty value is -1. Pairs ZooKeeper would fail on (no '=',
// not a number) are skipped instead.
func parseStatsTrack(data []byte) statsTrack {
	st := statsTrack{}
	fields := strings.FieldsFunc(string(data), func(r rune) bool { return r == ',' || r == ';' })
	for _, pair := range fields {
		parts := strings.Split(pair, "=")
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		switch {
		case len(parts) == 1 && strings.HasSuffix(pair, "="):
			st[parts[0]] = -1
		case len(parts) >= 2:
			if v, err := strconv.ParseInt(parts[1], 10, 64); err == nil {
				st[parts[0]] = v
			}
		}
	}
	return st
}

// get returns the value of key, or -1.
func (s statsTrack) get(key string) int64 {
	if v, ok := s[key]; ok {
		return v
	}
	return -1
}

// encode renders the text as ZooKeeper's StatsTrack.toString does: count
// and bytes first, then, if there are other keys, a '=' (so that pre-3.7
// parsers ignore the rest) and ";key=value" for each in sorted order.
func (s statsTrack) encode() []byte {
	b := make([]byte, 0, 32)
	b = append(b, quotaCount+"="...)
	b = strconv.AppendInt(b, s.get(quotaCount), 10)
	b = append(b, ","+quotaBytes+"="...)
	b = strconv.AppendInt(b, s.get(quotaBytes), 10)
	var extra []string
	for k := range s {
		if k != quotaCount && k != quotaBytes {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return b
	}
	slices.Sort(extra)
	b = append(b, '=')
	for _, k := range extra {
		b = append(b, ';')
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendInt(b, s[k], 10)
	}
	return b
}

// quotaNode returns /zookeeper/quota, which can never be deleted, so New
// and ReadSnapshot look it up once.
func (t *Tree) quotaNode() *node { return t.quota }

// quotaNodeOf returns the limits or stats node (name) of the quota on root,
// or nil.
func (t *Tree) quotaNodeOf(root, name string) *node {
	q := t.descend(t.quotaNode(), root[1:])
	if q == nil {
		return nil
	}
	return t.child(q, name)
}

// quotaRoot returns the deepest of path and its ancestors (not "/") that
// has a quota, or "" when none has: it walks /zookeeper/quota down along
// path's names, noting each level that holds a limits node. A tree without
// quota nodes answers without looking at the path.
func (t *Tree) quotaRoot(path string) string {
	q := t.quotaNode()
	if q == nil || q.kids.len() == 0 || len(path) < 2 || path[0] != '/' {
		return ""
	}
	root := ""
	for end := 0; end < len(path) && q != nil; {
		next := strings.IndexByte(path[end+1:], '/')
		if next < 0 {
			next = len(path)
		} else {
			next += end + 1
		}
		q = t.child(q, path[end+1:next])
		if q != nil && t.child(q, quotaLimitsName) != nil {
			root = path[:next]
		}
		end = next
	}
	return root
}

// checkQuota runs ZooKeeper's quota check for a write that changes the node
// count under path by countDiff and its bytes by bytesDiff, before the write
// is applied. Exceeded limits become warnings; an exceeded hard limit fails
// the write with QuotaExceeded when quotas are enforced. Count is checked
// before bytes.
func (t *Tree) checkQuota(ctx *applyCtx, path string, countDiff, bytesDiff int64) jute.Code {
	root := t.quotaRoot(path)
	if root == "" {
		return jute.OK
	}
	limits := parseStatsTrack(t.quotaNodeOf(root, quotaLimitsName).data())
	checkCount := countDiff != 0 && (limits.get(quotaCount) > -1 || limits.get(quotaCountHardLimit) > -1)
	checkBytes := bytesDiff != 0 && (limits.get(quotaBytes) > -1 || limits.get(quotaByteHardLimit) > -1)
	if !checkCount && !checkBytes {
		return jute.OK
	}
	stats := t.quotaNodeOf(root, quotaStatsName)
	if stats == nil {
		return jute.OK
	}
	usage := parseStatsTrack(stats.data())
	if checkCount {
		w := QuotaWarning{Root: root, Value: usage.get(quotaCount) + countDiff}
		if code := t.overLimit(ctx, w, limits.get(quotaCount), limits.get(quotaCountHardLimit)); code != jute.OK {
			return code
		}
	}
	if checkBytes {
		w := QuotaWarning{Root: root, Bytes: true, Value: usage.get(quotaBytes) + bytesDiff}
		return t.overLimit(ctx, w, limits.get(quotaBytes), limits.get(quotaByteHardLimit))
	}
	return jute.OK
}

// overLimit compares w.Value with the hard limit if there is one, else with
// the soft one, records a warning when it is over and decides the code.
func (t *Tree) overLimit(ctx *applyCtx, w QuotaWarning, soft, hard int64) jute.Code {
	w.Hard = hard > -1
	w.Limit = soft
	if w.Hard {
		w.Limit = hard
	}
	if w.Value <= w.Limit {
		return jute.OK
	}
	ctx.warnings = append(ctx.warnings, w)
	if w.Hard && t.cfg.EnforceQuota {
		return jute.QuotaExceeded
	}
	return jute.OK
}

// quotaCreated does the quota bookkeeping of the new node n at path created
// with data length size: a new stats node gets its subtree's usage, and the
// stats of the quota n falls under count it.
func (t *Tree) quotaCreated(ctx *applyCtx, path string, n *node, size int) {
	parentPath, name, _ := splitParent(path)
	if name == quotaStatsName && strings.HasPrefix(parentPath, quotaPath+"/") {
		count, bytes := t.subtreeUsage(parentPath[len(quotaPath):])
		st := statsTrack{quotaCount: count, quotaBytes: bytes}
		t.setQuotaData(ctx, path, n, st.encode())
	}
	t.updateQuota(ctx, path, 1, int64(size))
}

// updateQuota adds countDiff and bytesDiff to the stats of the quota path
// falls under, if there is one and its stats node exists.
func (t *Tree) updateQuota(ctx *applyCtx, path string, countDiff, bytesDiff int64) {
	root := t.quotaRoot(path)
	if root == "" {
		return
	}
	stats := t.quotaNodeOf(root, quotaStatsName)
	if stats == nil {
		return
	}
	st := parseStatsTrack(stats.data())
	st[quotaCount] = st.get(quotaCount) + countDiff
	st[quotaBytes] = st.get(quotaBytes) + bytesDiff
	t.setQuotaData(ctx, quotaPath+root+"/"+quotaStatsName, stats, st.encode())
}

// setQuotaData replaces the data of the stats node n at path without
// touching its version, mzxid or mtime, recording the old data for a
// multi's rollback.
func (t *Tree) setQuotaData(ctx *applyCtx, path string, n *node, data []byte) {
	if ctx.multi {
		ctx.undo = append(ctx.undo, undoRec{op: undoSetData, n: n, data: n.data(),
			version: n.version, mzxid: n.mzxid, mtime: n.mtime})
	}
	p := pathHash(path)
	t.digest -= t.ownHash(p, n)
	t.touch(n)
	t.dataSize += int64(len(data) - len(n.data()))
	n.setData(data)
	t.digest += t.ownHash(p, n)
}

// subtreeUsage returns the number of nodes at and below path and the sum of
// their data lengths (0, 0 when path does not exist).
func (t *Tree) subtreeUsage(path string) (count, bytes int64) {
	n := t.lookup(path)
	if n == nil {
		return 0, 0
	}
	return subtreeSize(n)
}

// RecomputeQuotaStats sets the data of every quota's stats node to the
// usage of its subtree, counted afresh: count=<nodes at and below the
// quota's path>,bytes=<their data bytes>, as ZooKeeper's DataTree does
// for every quota when it loads a snapshot (setupQuota, which calls
// updateQuotaForPath on each path with a zookeeper_limits node; a quota
// whose stats node is missing is skipped, a path that no longer exists
// counts 0). Unlike the updates of Apply, a recount includes the subtrees
// of nested quotas. The nodes change as setQuotaData changes them: data
// only, digest kept exact. It returns the paths of the stats nodes whose
// data changed, sorted.
//
// It is for trees whose stats come from elsewhere: Loader.Finish calls
// it, since an import from ZooKeeper carries stats that ZooKeeper itself
// would recompute. ReadSnapshot does not: a zkserverd snapshot holds the
// stats Apply kept, the same on every member and covered by the digest
// the snapshot records, and a recount could change them (nested quotas)
// and so the state outside the log.
func (t *Tree) RecomputeQuotaStats() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.quotaNode()
	if q == nil {
		return nil
	}
	// The quota roots: every level below /zookeeper/quota that holds a
	// limits node, in path order so that the result does not depend on
	// map order (a quota on /zookeeper counts the stats nodes' own bytes).
	var roots []string
	type item struct {
		n    *node
		path string
	}
	stack := []item{{q, ""}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.path != "" && t.child(it.n, quotaLimitsName) != nil {
			roots = append(roots, it.path)
		}
		it.n.kids.each(func(c *node) {
			stack = append(stack, item{c, it.path + "/" + c.name()})
		})
	}
	slices.Sort(roots)
	var changed []string
	ctx := &applyCtx{}
	for _, root := range roots {
		stats := t.quotaNodeOf(root, quotaStatsName)
		if stats == nil {
			continue
		}
		count, bytes := t.subtreeUsage(root)
		data := statsTrack{quotaCount: count, quotaBytes: bytes}.encode()
		if string(data) == string(stats.data()) {
			continue
		}
		path := quotaPath + root + "/" + quotaStatsName
		t.setQuotaData(ctx, path, stats, data)
		changed = append(changed, path)
	}
	return changed
}
