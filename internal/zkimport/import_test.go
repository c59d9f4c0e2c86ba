package zkimport

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
)

const testdata = "testdata/zk38/version-2"

// copyData copies the ZooKeeper test data, keeping only the files keep
// accepts, into a new directory.
func copyData(t *testing.T, keep func(name string) bool) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(testdata)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !keep(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(testdata, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func all(string) bool { return true }

func mustLoad(t *testing.T, dir string) (*loadResult, []*Node) {
	t.Helper()
	res, err := load(dir, dir, nil)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	nodes, _ := finalNodes(res.db)
	return res, nodes
}

// TestEveryStartingSnapshotAgrees restores from each snapshot in turn (the
// newer ones removed), and from no snapshot at all, replaying the logs over
// fuzzy snapshots: every start must give the same tree.
func TestEveryStartingSnapshotAgrees(t *testing.T) {
	_, want := mustLoad(t, testdata)
	if len(want) < 50 {
		t.Fatalf("only %d nodes in the test data", len(want))
	}
	cases := []struct{ name, newest string }{
		{"snapshot.52", "snapshot.52"}, {"snapshot.3b", "snapshot.3b"}, {"snapshot.2a", "snapshot.2a"},
		{"snapshot.14", "snapshot.14"}, {"snapshot.0", "snapshot.0"}, {"no snapshot", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyData(t, func(n string) bool {
				if !strings.HasPrefix(n, "snapshot.") {
					return true
				}
				return tc.newest != "" && cmpZxid(zxidOf(n), zxidOf(tc.newest)) <= 0
			})
			res, got := mustLoad(t, dir)
			if filepath.Base(res.snapshot) != tc.newest && !(tc.newest == "" && res.snapshot == "") {
				t.Errorf("used %q, want %q", res.snapshot, tc.newest)
			}
			compareNodes(t, got, want)
		})
	}
}

func zxidOf(name string) int64 {
	files, _ := listFilesNamed([]string{name}, "snapshot")
	return files[0].zxid
}

// listFilesNamed parses names like listFiles does, for tests.
func listFilesNamed(names []string, prefix string) ([]zkFile, error) {
	dir, err := os.MkdirTemp("", "names")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			return nil, err
		}
	}
	return listFiles(dir, prefix)
}

func compareNodes(t *testing.T, got, want []*Node) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d nodes, want %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("node %d:\n got %+v\nwant %+v", i, *got[i], *want[i])
		}
	}
}

func TestDamagedNewestSnapshotFallsBack(t *testing.T) {
	_, want := mustLoad(t, testdata)
	dir := copyData(t, all)
	p := filepath.Join(dir, "snapshot.52")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x55
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	res, got := mustLoad(t, dir)
	if filepath.Base(res.snapshot) != "snapshot.3b" || len(res.skipped) != 1 {
		t.Errorf("used %s, skipped %v", res.snapshot, res.skipped)
	}
	compareNodes(t, got, want)
}

func TestLogTail(t *testing.T) {
	full, _ := mustLoad(t, testdata)
	last := filepath.Join(testdata, "log.54")
	b, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	end := logEnd(t, b)
	tests := []struct {
		name    string
		mutate  func([]byte) []byte
		txns    int // replayed, relative to the intact data
		wantErr error
	}{
		{"torn last entry", func(b []byte) []byte { return b[:end-3] }, -1, nil},
		{"missing end marker", func(b []byte) []byte { b[end-1] = 0; return b }, -1, nil},
		{"no padding", func(b []byte) []byte { return b[:end] }, 0, nil},
		{"checksum mismatch", func(b []byte) []byte { b[end-2] ^= 1; return b }, 0, ErrBadLog},
		{"bad length", func(b []byte) []byte { copy(b[end+8:], []byte{0xff, 0, 0, 0}); return b }, 0, ErrBadLog},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }, 0, ErrBadLog},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyData(t, all)
			mutated := tc.mutate(bytes.Clone(b))
			if err := os.WriteFile(filepath.Join(dir, "log.54"), mutated, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := load(dir, dir, nil)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.txns != full.txns+tc.txns {
				t.Errorf("replayed %d txns, want %d", res.txns, full.txns+tc.txns)
			}
		})
	}
}

// logEnd returns the offset just past the last entry of a log file.
func logEnd(t *testing.T, b []byte) int {
	t.Helper()
	lr, err := newLogReader(bytes.NewReader(b), "log", nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := lr.next(); err != nil {
			return int(lr.pos) - 12 // the zero header that ended it
		}
	}
}

func TestRefusesNonEmptyTarget(t *testing.T) {
	to := t.TempDir()
	if err := os.WriteFile(filepath.Join(to, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Import(Options{From: "testdata/zk38", To: to})
	if !errors.Is(err, ErrTargetNotEmpty) {
		t.Fatalf("err = %v, want ErrTargetNotEmpty", err)
	}
	logTo := t.TempDir()
	if err := os.Mkdir(filepath.Join(logTo, "version-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Import(Options{From: "testdata/zk38", To: filepath.Join(t.TempDir(), "new"), ToLog: logTo})
	if !errors.Is(err, ErrTargetNotEmpty) {
		t.Fatalf("log dir: err = %v, want ErrTargetNotEmpty", err)
	}
}

func TestProgressLines(t *testing.T) {
	var out bytes.Buffer
	_, err := Import(Options{From: "testdata/zk38", To: t.TempDir(), Progress: &out, progressMin: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"reading snapshot.52", "replaying log.54", "writing the zkserverd snapshot (57 znodes)", "100%"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, out.String())
		}
	}
}

// TestInvalidTreeIsNotWritten: a node set the server would refuse (here an
// orphan) fails the import and leaves the target as it was.
func TestInvalidTreeIsNotWritten(t *testing.T) {
	d := emptyZooKeeperDB()
	d.put(&Node{Path: "/x/y", Data: []byte("orphan"), ACL: jute.OpenACLUnsafe})
	nodes, _ := finalNodes(d)
	to := t.TempDir()
	if _, err := writeTarget(to, to, 5, nodes, nil); !errors.Is(err, datatree.ErrBadSnapshot) {
		t.Fatalf("writeTarget: %v, want an error wrapping datatree.ErrBadSnapshot", err)
	}
	if entries, err := os.ReadDir(to); err != nil || len(entries) != 0 {
		t.Errorf("target holds %v (%v) after a failed import", entries, err)
	}
}

// TestImportRecountsQuotaStats: the quota statistics of the imported tree
// are counted from its nodes, as ZooKeeper counts them when it loads,
// whatever the snapshot and logs held (the stats node keeps what its
// create wrote, and ZooKeeper's in-memory updates are not logged); the
// dropped ephemerals do not count.
func TestImportRecountsQuotaStats(t *testing.T) {
	d := emptyZooKeeperDB()
	for _, n := range []*Node{
		{Path: "/app", Data: []byte("12345")},
		{Path: "/app/a", Data: []byte("678")},
		{Path: "/app/eph", Data: []byte("dropped"), Stat: Stat{EphemeralOwner: 0x1234}},
		{Path: "/zookeeper/quota/app", Data: nil},
		{Path: "/zookeeper/quota/app/zookeeper_limits", Data: []byte("count=10,bytes=-1")},
		{Path: "/zookeeper/quota/app/zookeeper_stats", Data: []byte("count=0,bytes=0")},
	} {
		n.ACL = jute.OpenACLUnsafe
		d.put(n)
	}
	nodes, dropped := finalNodes(d)
	if dropped != 1 {
		t.Fatalf("dropped %d ephemerals, want 1", dropped)
	}
	tree, err := loadTree(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _, code := tree.GetData("/zookeeper/quota/app/zookeeper_stats", nil, nil)
	if code != jute.OK || string(data) != "count=2,bytes=8" {
		t.Fatalf("imported stats %q (%v), want count=2,bytes=8", data, code)
	}
	if tree.Digest() != tree.ComputeDigest() {
		t.Fatalf("digest %#x, recomputed %#x", tree.Digest(), tree.ComputeDigest())
	}
}
