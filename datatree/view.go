package datatree

import "github.com/zkserverd/zkserverd/jute"

// View runs fn under the tree's read lock with a lookup of node stats, so
// that several lookups and what fn does with them (re-arming watches after a
// reconnect) are atomic with respect to writes. fn must not call the Tree.
func (t *Tree) View(fn func(lookup func(path string) (jute.Stat, bool))) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	fn(func(path string) (jute.Stat, bool) {
		n := t.lookup(path)
		if n == nil {
			return jute.Stat{}, false
		}
		var st jute.Stat
		n.stat(&st)
		return st, true
	})
}
