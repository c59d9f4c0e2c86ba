package replication

import (
	"sync"
	"unsafe"

	"github.com/zkserverd/zkserverd/txnlog"
)

// localEntries remembers, on the member that built a log entry, the
// transactions it packed into it, so that the FSM applies them without
// decoding the entry it has just encoded. Raft hands the FSM the very slice
// the leader passed to Apply, so an entry is known by its first byte's
// address; an entry read back from the log (a follower's, a replay after a
// restart) is not found and is decoded. The collector drops the entries of
// batches that failed. mu guards m.
type localEntries struct {
	mu    sync.Mutex
	m     map[*byte]*txnlog.Entry
	taken int // entries found by take
}

func newLocalEntries() *localEntries {
	return &localEntries{m: make(map[*byte]*txnlog.Entry)}
}

func entryKey(data []byte) *byte {
	if len(data) == 0 {
		return nil
	}
	return unsafe.SliceData(data)
}

func (l *localEntries) put(data []byte, en *txnlog.Entry) {
	l.mu.Lock()
	l.m[entryKey(data)] = en
	l.mu.Unlock()
}

// take removes and returns the transactions built into data, or nil.
func (l *localEntries) take(data []byte) *txnlog.Entry {
	k := entryKey(data)
	if k == nil {
		return nil
	}
	l.mu.Lock()
	en, ok := l.m[k]
	if ok {
		delete(l.m, k)
		l.taken++
	}
	l.mu.Unlock()
	return en
}

// localEntry returns the transactions of batch as the FSM would decode them
// from an entry written at time, or nil when a proposal of batch was
// forwarded by another member (only its encoding is here). It sets the
// time of the proposals' transactions, which are Submit's private copies.
func localEntry(batch []proposal, time int64) *txnlog.Entry {
	en := &txnlog.Entry{Time: time, Txns: make([]*txnlog.Txn, len(batch))}
	for i, p := range batch {
		if p.txn == nil {
			return nil
		}
		p.txn.Tree.Time = time
		en.Txns[i] = p.txn
	}
	return en
}

// decodeEntry returns the transactions of a log entry: the ones this member
// packed into it when it built it, else the decoded entry. Every kind of
// transaction a member proposes is what its encoding decodes to
// (TestLocalEntriesDecodeToThemselves), so both give the same result.
func (f *fsm) decodeEntry(data []byte) (*txnlog.Entry, error) {
	if local := f.local.take(data); local != nil {
		return local, nil
	}
	return txnlog.Decode(data)
}
