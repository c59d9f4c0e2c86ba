package replication

import (
	"sync"

	"github.com/hashicorp/raft"
)

// recentLogs serves reads of the entries appended last from memory. raft
// reads an entry back soon after appending it: a leader to send it to its
// followers, a follower to apply it once committed. From raft-wal each such
// read is a pread and a decode (about a fifth of a member's CPU under
// writes). The cache holds the latest run of consecutive entries, at most
// maxCachedLogs of them and maxCachedLogBytes of data, so its memory stays
// small whatever the entries' size. Guarded by mu.
// (Not raft.NewLogCache: it bounds only the count, so 256 entries of 1 MiB
// would stay in memory, and it empties itself at every compaction.)
type recentLogs struct {
	raft.LogStore

	mu      sync.RWMutex
	entries []*raft.Log // consecutive indexes, oldest first
	bytes   int         // data bytes held by entries

	// afterStore, when set before raft starts, is called after every
	// append stored (commithint.go).
	afterStore func()
}

const (
	maxCachedLogs     = 256
	maxCachedLogBytes = 8 << 20
)

func newRecentLogs(store raft.LogStore) *recentLogs { return &recentLogs{LogStore: store} }

func (c *recentLogs) GetLog(index uint64, log *raft.Log) error {
	c.mu.RLock()
	if n := len(c.entries); n > 0 {
		first := c.entries[0].Index
		if index >= first && index < first+uint64(n) {
			*log = *c.entries[index-first]
			c.mu.RUnlock()
			return nil
		}
	}
	c.mu.RUnlock()
	return c.LogStore.GetLog(index, log)
}

// IsMonotonic implements raft.MonotonicLogStore for the store beneath:
// raft-wal takes no entry after a hole, so after a snapshot install or a
// restore (restore.go), which leave one, raft must empty the log first
// rather than compact it, and it does so only for a store that says so.
func (c *recentLogs) IsMonotonic() bool {
	m, ok := c.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func (c *recentLogs) StoreLog(log *raft.Log) error {
	return c.StoreLogs([]*raft.Log{log})
}

// StoreLogs appends to the store and then to the cache; entries that do
// not follow the cached ones start the cache anew.
func (c *recentLogs) StoreLogs(logs []*raft.Log) error {
	if err := c.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range logs {
		if n := len(c.entries); n > 0 && c.entries[n-1].Index+1 != l.Index {
			c.clearLocked()
		}
		c.entries = append(c.entries, l)
		c.bytes += len(l.Data)
	}
	for len(c.entries) > maxCachedLogs || (c.bytes > maxCachedLogBytes && len(c.entries) > 0) {
		c.bytes -= len(c.entries[0].Data)
		c.entries[0] = nil
		c.entries = c.entries[1:]
	}
	if c.afterStore != nil {
		c.afterStore()
	}
	return nil
}

// DeleteRange deletes from the store and drops the cached entries in
// [min, max]. Compaction deletes from the front and a follower's
// truncation from the back; the cache keeps the rest, so that the entries
// raft is about to apply or send (a snapshot compacts the log every
// 50,000–100,000 transactions) are still served from memory.
func (c *recentLogs) DeleteRange(min, max uint64) error {
	c.mu.Lock()
	c.dropLocked(min, max)
	c.mu.Unlock()
	return c.LogStore.DeleteRange(min, max)
}

// dropLocked drops the cached entries in [from, to]: a run at the front
// or at the back. A range that would leave a gap in the middle, or that
// covers every entry, empties the cache.
func (c *recentLogs) dropLocked(from, to uint64) {
	n := len(c.entries)
	if n == 0 || to < c.entries[0].Index || from > c.entries[n-1].Index {
		return
	}
	first := c.entries[0].Index
	lo, hi := int(max(from, first)-first), n
	if to < c.entries[n-1].Index {
		hi = int(to-first) + 1
	}
	if (lo > 0) == (hi < n) {
		c.clearLocked()
		return
	}
	for _, l := range c.entries[lo:hi] {
		c.bytes -= len(l.Data)
	}
	clear(c.entries[lo:hi])
	if lo == 0 {
		c.entries = c.entries[hi:]
	} else {
		c.entries = c.entries[:lo]
	}
}

func (c *recentLogs) clearLocked() {
	clear(c.entries)
	c.entries, c.bytes = c.entries[:0], 0
}
