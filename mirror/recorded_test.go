package mirror

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestRecordedZooKeeper38 replays data directories a real ZooKeeper 3.8
// wrote, with the live reads taken before it was killed: zkimport's
// (sessions still open) and the mirror's own recording, which the live
// test writes with -record and which goes through every transaction type.
func TestRecordedZooKeeper38(t *testing.T) {
	for _, tc := range []struct {
		name, dir, live string
		types           []string // transaction kinds the data must hold
	}{
		{"zkimport", "../internal/zkimport/testdata/zk38/version-2", "../internal/zkimport/testdata/zk38/golden.json",
			[]string{"create", "setData", "setACL", "delete", "multi", "multi-failed", "createSession", "closeSession", "createContainer", "createTTL", "error"}},
		{"mirror", "testdata/zk38/version-2", "testdata/zk38/live.json", allKinds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stats := checkDataDir(t, filepath.FromSlash(tc.dir), loadLive(t, filepath.FromSlash(tc.live)))
			for _, k := range tc.types {
				if stats.types[k] == 0 {
					t.Errorf("no %s transaction in the data", k)
				}
			}
		})
	}
}

// TestRecordedFromEverySnapshot starts the mirror from snapshots of the
// recording and replays the logs after them as a sync phase (some of the
// transactions the snapshot holds resent first, as a leader may), with
// UpToDate at the end or a few transactions in: every start ends in
// ZooKeeper's state, also from the snapshots ZooKeeper wrote while it
// applied writes (fuzzy: 0x17 and 0x54 already hold the transaction after
// them).
func TestRecordedFromEverySnapshot(t *testing.T) {
	dir := filepath.FromSlash("testdata/zk38/version-2")
	live := loadLive(t, filepath.FromSlash("testdata/zk38/live.json"))
	snaps := zkFiles(t, dir, "snapshot")
	if len(snaps) < 3 {
		t.Fatalf("only %d snapshots in the recording", len(snaps))
	}
	for _, tc := range []struct {
		snap   string
		resent int64 // how many transactions before the snapshot's zxid are fed again
		after  int64 // UpToDate after this many transactions past the snapshot; 0: at the end
	}{
		{snaps[1], 0, 0}, {snaps[1], 0, 2}, {snaps[3], 0, 0}, {snaps[3], 0, 1}, {snaps[3], 0, 5},
		{snaps[3], 3, 2}, {snaps[len(snaps)-1], 4, 0},
	} {
		snap := tc.snap
		t.Run(fmt.Sprintf("%s-%d+%d", filepath.Base(snap), tc.resent, tc.after), func(t *testing.T) {
			syncFrom(t, dir, snap, tc.resent, tc.after, live)
		})
	}
}

// syncFrom runs a sync phase from the snapshot file snap of dir: the
// snapshot, the logged transactions from resent before its zxid, UpToDate
// after the transaction after more past it (0: after the last one), the
// rest; the mirror must then equal the live read.
func syncFrom(t *testing.T, dir, snap string, resent, after int64, live []liveNode) {
	t.Helper()
	var applied []Applied
	st := New(Options{Logger: testLogger(t), Applied: func(a Applied) { applied = append(applied, a) }})
	zxid := loadSnapshotFile(t, st, snap)
	if st.LastZxid() != zxid {
		t.Fatalf("LastZxid %#x after a snapshot at %#x", st.LastZxid(), zxid)
	}
	syncAt := int64(0)
	if after > 0 {
		syncAt = zxid + after
	}
	replayLogs(t, st, dir, &applied, max(zxid-resent, 0), syncAt)
	st.UpToDate()
	if err := st.Err(); err != nil || !st.Synced() {
		t.Fatalf("after UpToDate: err %v, synced %v", err, st.Synced())
	}
	compareLive(t, st, live)
}
