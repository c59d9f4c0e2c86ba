package mirror

import (
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
