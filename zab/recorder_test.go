package zab

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// recorder is a test Handler: it decodes no transaction, it records each
// (zxid, bytes) and checks that zxids strictly increase. A snapshot is
// skipped over by its layout (recording the paths it holds), since the
// Handler must consume exactly its bytes.
type recorder struct {
	mu       sync.Mutex
	present  int64 // when ≥ 0, LastZxid returns it (once) instead of the last zxid
	events   []event
	last     int64
	snapZxid int64
	paths    map[string]bool // the last snapshot's paths
	truncErr error           // Truncate's answer
	upToDate int
	bad      error // the first violation seen
}

type event struct {
	snap  bool // a snapshot at zxid; else a transaction
	trunc bool
	zxid  int64
	data  []byte
}

func newRecorder() *recorder { return &recorder{present: -1} }

func (r *recorder) LastZxid() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.present >= 0 {
		z := r.present
		r.present = -1
		return z
	}
	return r.last
}

func (r *recorder) fail(err error) error {
	if r.bad == nil {
		r.bad = err
	}
	return err
}

func (r *recorder) Snapshot(zxid int64, br *bufio.Reader) error {
	paths, err := skipSnapshot(br)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		return r.fail(fmt.Errorf("snapshot at 0x%x: %w", zxid, err))
	}
	r.paths, r.snapZxid, r.last = paths, zxid, zxid
	r.events = append(r.events, event{snap: true, zxid: zxid})
	return nil
}

func (r *recorder) Truncate(zxid int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.truncErr != nil {
		return r.truncErr
	}
	r.last = zxid
	r.events = append(r.events, event{trunc: true, zxid: zxid})
	return nil
}

func (r *recorder) Txn(zxid int64, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if zxid <= r.last {
		return r.fail(fmt.Errorf("txn 0x%x after 0x%x: zxids must strictly increase", zxid, r.last))
	}
	h, err := ParseTxnHeader(data)
	if err != nil {
		return r.fail(err)
	}
	if h.Zxid != zxid {
		return r.fail(fmt.Errorf("txn 0x%x carries header zxid 0x%x", zxid, h.Zxid))
	}
	r.last = zxid
	r.events = append(r.events, event{zxid: zxid, data: data})
	return nil
}

func (r *recorder) UpToDate() {
	r.mu.Lock()
	r.upToDate++
	r.mu.Unlock()
}

// txn returns the recorded transaction with zxid, or nil.
func (r *recorder) txn(zxid int64) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if !e.snap && !e.trunc && e.zxid == zxid {
			return e.data
		}
	}
	return nil
}

// find returns the first recorded transaction whose header satisfies f.
func (r *recorder) find(f func(TxnHeader) bool) (TxnHeader, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.snap || e.trunc {
			continue
		}
		if h, err := ParseTxnHeader(e.data); err == nil && f(h) {
			return h, true
		}
	}
	return TxnHeader{}, false
}

func (r *recorder) lastZxid() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// checkContiguous fails t unless the recorded history has no gap: within
// an epoch each transaction follows the previous zxid (or the snapshot's)
// by one, and a new epoch starts at counter 1.
func (r *recorder) checkContiguous(t *testing.T, name string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad != nil {
		t.Errorf("%s: %v", name, r.bad)
	}
	for i := 1; i < len(r.events); i++ {
		prev, e := r.events[i-1], r.events[i]
		if e.snap || e.trunc {
			continue
		}
		if Epoch(e.zxid) == Epoch(prev.zxid) {
			if e.zxid != prev.zxid+1 {
				t.Errorf("%s: gap: 0x%x then 0x%x", name, prev.zxid, e.zxid)
			}
		} else if e.zxid&0xffffffff != 1 {
			t.Errorf("%s: new epoch starts at 0x%x (after 0x%x)", name, e.zxid, prev.zxid)
		}
	}
}

// waitFor polls cond every 50 ms for at most limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// skipSnapshot reads past what SerializeUtils.serializeSnapshot writes:
// the sessions, DataTree.serialize's ACL cache, then the nodes (path,
// DataNode: data, acl id, StatPersisted) up to the "/" terminator. It
// returns the nodes' paths.
func skipSnapshot(r *bufio.Reader) (map[string]bool, error) {
	sr := snapReader{r: r}
	for n := sr.count(); n > 0 && sr.err == nil; n-- {
		sr.skip(12) // long id, int timeout
	}
	for n := sr.count(); n > 0 && sr.err == nil; n-- {
		sr.skip(8) // the ACL list's id
		for m := sr.count(); m > 0 && sr.err == nil; m-- {
			sr.skip(4) // perms
			sr.str()   // scheme
			sr.str()   // id
		}
	}
	paths := make(map[string]bool)
	for sr.err == nil {
		p := sr.str()
		if p == "/" || sr.err != nil {
			break
		}
		paths[p] = true
		sr.str()                 // data
		sr.skip(8)               // acl
		sr.skip(4*8 + 3*4 + 2*8) // StatPersisted
	}
	return paths, sr.err
}

type snapReader struct {
	r   *bufio.Reader
	err error
}

func (s *snapReader) int() int32 {
	var b [4]byte
	if s.err == nil {
		_, s.err = io.ReadFull(s.r, b[:])
	}
	return int32(binary.BigEndian.Uint32(b[:]))
}

func (s *snapReader) count() int {
	n := s.int()
	if n < -1 || n > 1<<24 {
		s.err = errors.New("bad count")
	}
	return int(n)
}

func (s *snapReader) skip(n int) {
	if s.err == nil {
		_, s.err = s.r.Discard(n)
	}
}

func (s *snapReader) str() string {
	n := s.int()
	if n <= 0 || s.err != nil {
		return ""
	}
	if n > 1<<24 {
		s.err = errors.New("bad length")
		return ""
	}
	b := make([]byte, n)
	if s.err == nil {
		_, s.err = io.ReadFull(s.r, b)
	}
	return string(b)
}
