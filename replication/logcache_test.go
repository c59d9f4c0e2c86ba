package replication

import (
	"testing"

	"github.com/hashicorp/raft"
)

// countingStore counts the reads that reach the store.
type countingStore struct {
	*raft.InmemStore
	reads int
}

func (s *countingStore) GetLog(index uint64, log *raft.Log) error {
	s.reads++
	return s.InmemStore.GetLog(index, log)
}

func entries(first, count uint64, size int) []*raft.Log {
	logs := make([]*raft.Log, count)
	for i := range logs {
		logs[i] = &raft.Log{Index: first + uint64(i), Term: 1, Data: make([]byte, size)}
	}
	return logs
}

func TestRecentLogsServesTheLatestEntries(t *testing.T) {
	tests := []struct {
		name    string
		appends [][]*raft.Log
		delete  [2]uint64 // a DeleteRange after the appends, if not zero
		cached  []uint64  // read from memory
		stored  []uint64  // read from the store
	}{
		{"consecutive appends", [][]*raft.Log{entries(1, 3, 10), entries(4, 2, 10)}, [2]uint64{}, []uint64{1, 3, 5}, nil},
		{"count bound", [][]*raft.Log{entries(1, maxCachedLogs+10, 1)}, [2]uint64{}, []uint64{11, maxCachedLogs + 10}, []uint64{1, 10}},
		{"byte bound", [][]*raft.Log{entries(1, 4, maxCachedLogBytes/3)}, [2]uint64{}, []uint64{2, 4}, []uint64{1}},
		{"an entry larger than the bound", [][]*raft.Log{entries(1, 1, maxCachedLogBytes+1)}, [2]uint64{}, nil, []uint64{1}},
		{"a gap starts anew", [][]*raft.Log{entries(1, 3, 10), entries(10, 2, 10)}, [2]uint64{}, []uint64{10, 11}, nil},
		{"compaction drops the front", [][]*raft.Log{entries(1, 5, 10)}, [2]uint64{1, 3}, []uint64{4, 5}, nil},
		{"truncation drops the back", [][]*raft.Log{entries(1, 5, 10)}, [2]uint64{4, 5}, []uint64{1, 3}, nil},
		{"a deletion inside empties it", [][]*raft.Log{entries(1, 5, 10)}, [2]uint64{2, 3}, nil, []uint64{1, 4, 5}},
		{"a deletion before keeps it", [][]*raft.Log{entries(5, 3, 10)}, [2]uint64{1, 2}, []uint64{5, 7}, nil},
		{"a deletion of everything empties it", [][]*raft.Log{entries(5, 3, 10)}, [2]uint64{1, 9}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &countingStore{InmemStore: raft.NewInmemStore()}
			c := newRecentLogs(store)
			for _, logs := range tc.appends {
				if err := c.StoreLogs(logs); err != nil {
					t.Fatal(err)
				}
			}
			if tc.delete[0] > 0 {
				if err := c.DeleteRange(tc.delete[0], tc.delete[1]); err != nil {
					t.Fatal(err)
				}
			}
			read := func(idx uint64) {
				var l raft.Log
				if err := c.GetLog(idx, &l); err != nil || l.Index != idx {
					t.Fatalf("GetLog(%d) = %d, %v", idx, l.Index, err)
				}
			}
			for _, idx := range tc.cached {
				read(idx)
			}
			if store.reads != 0 {
				t.Fatalf("%d of %v read from the store, want none", store.reads, tc.cached)
			}
			for _, idx := range tc.stored {
				read(idx)
			}
			if store.reads != len(tc.stored) {
				t.Fatalf("%d store reads for %v, want %d", store.reads, tc.stored, len(tc.stored))
			}
			if c.bytes > maxCachedLogBytes || len(c.entries) > maxCachedLogs {
				t.Fatalf("cache holds %d entries, %d bytes", len(c.entries), c.bytes)
			}
			held := 0
			for i, l := range c.entries {
				held += len(l.Data)
				if i > 0 && l.Index != c.entries[i-1].Index+1 {
					t.Fatalf("cached indexes %d, %d are not consecutive", c.entries[i-1].Index, l.Index)
				}
			}
			if held != c.bytes {
				t.Fatalf("cache counts %d bytes, holds %d", c.bytes, held)
			}
		})
	}
}
