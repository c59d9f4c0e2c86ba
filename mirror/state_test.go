package mirror

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func TestZxidOrder(t *testing.T) {
	ok := op(jute.OpError, errorTxn(jute.NoNode))
	tests := []struct {
		name    string
		zxids   []int64
		wantErr bool
	}{
		{"consecutive", []int64{1, 2, 3}, false},
		{"a new epoch starts at 1", []int64{1, 2, 0x100000001, 0x100000002}, false},
		{"a later epoch may follow directly", []int64{1, 0x500000001}, false},
		{"gap", []int64{1, 3}, true},
		{"repeat", []int64{1, 2, 2}, true},
		{"going back", []int64{1, 2, 1}, true},
		{"a new epoch not at 1", []int64{1, 0x100000002}, true},
		{"not starting at 1", []int64{2}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newSynced(t, new([]Applied))
			var err error
			for _, z := range tc.zxids {
				if err = st.Txn(z, ok.entry(z)); err != nil {
					break
				}
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && (!errors.Is(err, ErrDiverged) || st.Err() == nil) {
				t.Fatalf("err %v; state err %v", err, st.Err())
			}
			if !tc.wantErr && st.LastZxid() != tc.zxids[len(tc.zxids)-1] {
				t.Fatalf("last zxid %#x", st.LastZxid())
			}
		})
	}
}

func TestHeaderZxidMustMatch(t *testing.T) {
	st := newSynced(t, new([]Applied))
	if err := st.Txn(1, op(jute.OpError, errorTxn(jute.NoNode)).entry(7)); err == nil || st.Err() == nil {
		t.Fatalf("an entry of zxid 7 applied as zxid 1: %v", err)
	}
}

func TestTruncate(t *testing.T) {
	st := newSynced(t, new([]Applied))
	feed(t, st, op(jute.OpCreate, createTxn("/a", "", false, 1)), op(jute.OpCreate, createTxn("/b", "", false, 2)))
	if err := st.Truncate(2); err != nil {
		t.Fatalf("truncate to the last zxid: %v", err)
	}
	if err := st.Truncate(1); !errors.Is(err, ErrCannotTruncate) {
		t.Fatalf("truncate to 1: %v", err)
	}
	if err := st.Truncate(5); !errors.Is(err, ErrCannotTruncate) {
		t.Fatalf("truncate to 5: %v", err)
	}
	if st.Err() != nil || st.LastZxid() != 2 {
		t.Fatalf("a refused truncate changed the state: %v %d", st.Err(), st.LastZxid())
	}
	st.Txn(9, op(jute.OpError, errorTxn(jute.NoNode)).entry(9)) // a gap breaks it
	if err := st.Truncate(2); !errors.Is(err, ErrBroken) {
		t.Fatalf("truncate of a broken state: %v", err)
	}
}

// recordedSnapshot returns the body of a recorded snapshot file.
func recordedSnapshot(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "zk38", "version-2", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw[16:]
}

func TestSnapshotRepairsABrokenState(t *testing.T) {
	st := newSynced(t, new([]Applied))
	st.Txn(3, op(jute.OpError, errorTxn(jute.NoNode)).entry(3))
	if st.Err() == nil {
		t.Fatal("not broken")
	}
	body := recordedSnapshot(t, "snapshot.3f")
	if err := st.Snapshot(0x3f, bufio.NewReader(bytes.NewReader(body))); err != nil {
		t.Fatal(err)
	}
	if st.Err() != nil || st.LastZxid() != 0x3f || st.Synced() {
		t.Fatalf("after the snapshot: err %v, zxid %#x, synced %v", st.Err(), st.LastZxid(), st.Synced())
	}
	if st.Tree().NodeCount() < 10 || st.Sessions().Len() == 0 {
		t.Fatalf("%d nodes, %d sessions", st.Tree().NodeCount(), st.Sessions().Len())
	}
	st.UpToDate()
	if !st.Synced() {
		t.Fatal("not synced after UpToDate")
	}
}

func TestBadSnapshot(t *testing.T) {
	body := recordedSnapshot(t, "snapshot.3f")
	// Only the body is read: n bytes, the last 5 of them the "/" record.
	r := bufio.NewReader(bytes.NewReader(body))
	if err := New(Options{}).Snapshot(0x3f, r); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	n := len(body) - len(rest)
	if !bytes.Equal(body[n-5:n], []byte("\x00\x00\x00\x01/")) {
		t.Fatalf("the body does not end with \"/\": %q", body[n-5:n])
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"truncated", body[:len(body)/2]},
		{"no terminator", body[:n-5]},
		{"negative ACL count", append([]byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xf0}, body[8:]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newSynced(t, new([]Applied))
			feed(t, st, op(jute.OpCreate, createTxn("/a", "", false, 1)))
			if err := st.Snapshot(0x3f, bufio.NewReader(bytes.NewReader(tc.b))); err == nil {
				t.Fatal("a bad snapshot was accepted")
			}
			if st.Err() == nil {
				t.Fatal("a failed snapshot leaves the state usable")
			}
		})
	}
}

// TestFuzzySnapshotNeedsTheSyncPhase: snapshot.54 of the recording already
// holds zxid 0x55, so applying 0x55 strictly (UpToDate right after the
// snapshot) is a divergence, while the sync phase replays it.
func TestFuzzySnapshotNeedsTheSyncPhase(t *testing.T) {
	entry := recordedEntry(t, 0x55)
	for _, syncFirst := range []bool{true, false} {
		st := New(Options{Logger: testLogger(t)})
		if err := st.Snapshot(0x54, bufio.NewReader(bytes.NewReader(recordedSnapshot(t, "snapshot.54")))); err != nil {
			t.Fatal(err)
		}
		if syncFirst {
			st.UpToDate()
		}
		err := st.Txn(0x55, entry)
		st.UpToDate()
		if syncFirst != (err != nil) || syncFirst != (st.Err() != nil) {
			t.Errorf("UpToDate before 0x55 %v: err %v, state err %v", syncFirst, err, st.Err())
		}
	}
}

// recordedEntry returns the recorded log entry of zxid.
func recordedEntry(t *testing.T, zxid int64) []byte {
	t.Helper()
	var found []byte
	for _, p := range zkFiles(t, filepath.Join("testdata", "zk38", "version-2"), "log") {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		err = readEntries(f, func(e []byte) {
			if len(e) >= 20 && int64(beUint64(e[12:20])) == zxid {
				found = e
			}
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if found == nil {
		t.Fatalf("no entry of zxid %#x", zxid)
	}
	return found
}

// TestConcurrentReads reads the tree and the session table while
// transactions are applied (run with -race).
func TestConcurrentReads(t *testing.T) {
	st := newSynced(t, new([]Applied))
	feed(t, st, op(jute.OpCreate, createTxn("/a", "", false, 1)))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				st.Tree().GetChildren("/a", nil, nil)
				st.Sessions().All()
				st.LastZxid()
				st.Err()
			}
		}()
	}
	for i := range 200 {
		feed(t, st, op(jute.OpCreate, createTxn("/a/n"+string(rune('a'+i%26))+string(rune('a'+i/26)), "", false, int32(i+1))))
	}
	close(stop)
	wg.Wait()
	if n, _, _ := st.Tree().GetChildren("/a", nil, nil); len(n) != 200 {
		t.Fatalf("%d children", len(n))
	}
}

// TestSyncPhaseOrder: in the sync phase transactions the snapshot already
// holds may be resent, but each must come after the one before it, and
// those after the snapshot must follow it without a gap.
func TestSyncPhaseOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		zxids   []int64
		wantErr bool
	}{
		{"resent then new", []int64{0x3d, 0x3e, 0x3f, 0x40, 0x41}, false},
		{"new only", []int64{0x40, 0x41}, false},
		{"backwards", []int64{0x3e, 0x3d}, true},
		{"repeat", []int64{0x40, 0x40}, true},
		{"gap after the snapshot", []int64{0x3e, 0x41}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := New(Options{Logger: testLogger(t)})
			if err := st.Snapshot(0x3f, bufio.NewReader(bytes.NewReader(recordedSnapshot(t, "snapshot.3f")))); err != nil {
				t.Fatal(err)
			}
			var err error
			for _, z := range tc.zxids {
				if err = st.Txn(z, recordedEntry(t, z)); err != nil {
					break
				}
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			st.UpToDate()
			if (st.Err() != nil) != tc.wantErr {
				t.Fatalf("state err %v", st.Err())
			}
			if !tc.wantErr && st.LastZxid() != tc.zxids[len(tc.zxids)-1] {
				t.Fatalf("last zxid %#x", st.LastZxid())
			}
		})
	}
}
