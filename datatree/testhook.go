//go:build testhooks

package datatree

import "fmt"

// DivergeForTest replaces the data of the node at path as a faulty,
// non-deterministic apply would: the data changes and the digest follows
// it (Digest still equals ComputeDigest), but no zxid is used and the
// node's mzxid, mtime and version stay as they were. It returns an error
// if there is no node at path. Only test builds (tag testhooks) have it.
func (t *Tree) DivergeForTest(path string, data []byte) error {
	return t.replaceDataForTest(path, data, true)
}

// CorruptForTest replaces the data of the node at path without updating
// the digest, as a memory corruption would: afterwards Digest differs from
// ComputeDigest. It returns an error if there is no node at path. Only
// test builds (tag testhooks) have it.
func (t *Tree) CorruptForTest(path string, data []byte) error {
	return t.replaceDataForTest(path, data, false)
}

// replaceDataForTest replaces the data of the node at path, keeping the
// digest exact if keepDigest is set.
func (t *Tree) replaceDataForTest(path string, data []byte, keepDigest bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.lookup(path)
	if n == nil || path == "" {
		return fmt.Errorf("datatree: no node at %q", path)
	}
	p := pathHash(path)
	old := t.ownHash(p, n)
	t.touch(n)
	t.dataSize += int64(len(data) - len(n.data()))
	n.setData(data)
	if keepDigest {
		t.digest += t.ownHash(p, n) - old
	}
	return nil
}
