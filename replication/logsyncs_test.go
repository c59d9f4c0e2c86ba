package replication

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	walfs "github.com/hashicorp/raft-wal/fs"
)

// TestLogSyncsTimesEverySync: every sync's duration is observed, one
// longer than the threshold is counted and logged, and the sync's error
// is returned as it was.
func TestLogSyncsTimesEverySync(t *testing.T) {
	failed := errors.New("disk gone")
	tests := []struct {
		name      string
		threshold time.Duration
		takes     time.Duration
		err       error
		wantSlow  int64
	}{
		{"fast", time.Hour, 0, nil, 0},
		{"slow", 5 * time.Millisecond, 20 * time.Millisecond, nil, 1},
		{"slow and failed", 5 * time.Millisecond, 20 * time.Millisecond, failed, 1},
		{"fast and failed", time.Hour, 0, failed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logged bytes.Buffer
			var observed []time.Duration
			s := &logSyncs{threshold: tt.threshold, log: slog.New(slog.NewTextHandler(&logged, nil)),
				observe: func(d time.Duration) { observed = append(observed, d) }}
			err := s.timed("0001.wal", func() error { time.Sleep(tt.takes); return tt.err })
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("timed returned %v, want %v", err, tt.err)
			}
			if len(observed) != 1 || observed[0] < tt.takes {
				t.Fatalf("observed %v, want one duration of at least %v", observed, tt.takes)
			}
			if got := s.slow.Load(); got != tt.wantSlow {
				t.Fatalf("slow = %d, want %d", got, tt.wantSlow)
			}
			warned := strings.Contains(logged.String(), "level=WARN") && strings.Contains(logged.String(), "file=0001.wal")
			if warned != (tt.wantSlow > 0) {
				t.Fatalf("warning logged = %v, want %v: %q", warned, tt.wantSlow > 0, logged.String())
			}
		})
	}
	var none *logSyncs
	if err := none.timed("x", func() error { return failed }); !errors.Is(err, failed) {
		t.Fatalf("nil logSyncs: %v", err)
	}
}

// TestNodeCountsSlowLogSyncs: a member's WAL fsyncs reach OnLogSync, and
// one held past FsyncWarningThreshold is counted by SlowLogSyncs.
func TestNodeCountsSlowLogSyncs(t *testing.T) {
	const hold = 100 * time.Millisecond
	gate := newSyncGate()
	var mu sync.Mutex
	var longest time.Duration
	n := openNodeSeams(t, Config{DataDir: t.TempDir(),
		FsyncWarningThreshold: hold / 2,
		OnLogSync: func(d time.Duration) {
			mu.Lock()
			longest = max(longest, d)
			mu.Unlock()
		}}, seams{walFS: gateFS(walfs.New(), gate)})
	defer n.Close()
	defer gate.release()
	if o := await(t, n.Submit(createTxn("/fast"))); o.Err != nil {
		t.Fatal(o.Err)
	}
	before := n.SlowLogSyncs()
	gate.close()
	ch := n.Submit(createTxn("/held"))
	time.Sleep(hold)
	gate.release()
	if o := await(t, ch); o.Err != nil {
		t.Fatal(o.Err)
	}
	if got := n.SlowLogSyncs(); got <= before {
		t.Fatalf("SlowLogSyncs = %d after an fsync held for %v, want more than %d", got, hold, before)
	}
	mu.Lock()
	defer mu.Unlock()
	if longest < hold {
		t.Fatalf("longest observed fsync %v, want at least %v", longest, hold)
	}
}
