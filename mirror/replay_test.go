package mirror

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/internal/zkimport"
	"github.com/zkserverd/zkserverd/jute"
)

// liveNode is one znode as a client read it from a running ZooKeeper
// (testdata/zk38/live.json).
type liveNode = testutil.Znode

// zkFiles lists dir's files named prefix.<hex zxid>, sorted by zxid.
func zkFiles(t *testing.T, dir, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		name string
		zxid uint64
	}
	var files []file
	for _, e := range entries {
		hex, ok := strings.CutPrefix(e.Name(), prefix+".")
		if !ok {
			continue
		}
		z, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		files = append(files, file{e.Name(), z})
	}
	slices.SortFunc(files, func(a, b file) int {
		switch {
		case a.zxid < b.zxid:
			return -1
		case a.zxid > b.zxid:
			return 1
		}
		return 0
	})
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Join(dir, f.name)
	}
	return out
}

// snapshotZxid returns the zxid a snapshot file is named after.
func snapshotZxid(t *testing.T, path string) int64 {
	t.Helper()
	hex := strings.TrimPrefix(filepath.Base(path), "snapshot.")
	z, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(z)
}

// loadSnapshotFile feeds st the body of a ZooKeeper snapshot file, as a
// SNAP sync would: the 16-byte file header is skipped, Snapshot reads the
// body, and the reader must then stand exactly at the file's seal (the
// Adler-32 of everything before it, then "/").
func loadSnapshotFile(t *testing.T, st *State, path string) int64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zxid := snapshotZxid(t, path)
	r := bufio.NewReader(bytes.NewReader(raw[16:]))
	if err := st.Snapshot(zxid, r); err != nil {
		t.Fatalf("Snapshot(%s): %v", filepath.Base(path), err)
	}
	rest, _ := io.ReadAll(r)
	end := len(raw) - len(rest)
	if len(rest) < 13 || binary.BigEndian.Uint64(rest) != uint64(adler32.Checksum(raw[:end])) ||
		string(rest[8:13]) != "\x00\x00\x00\x01/" {
		t.Fatalf("Snapshot did not stop at the end of the body: %d bytes left", len(rest))
	}
	return zxid
}

// replayStats says what a replay went through.
type replayStats struct {
	txns    int
	digests int // transactions whose TxnDigest was checked
	types   map[string]int
}

// replayLogs feeds st every logged transaction of dir after its zxid, in
// order, and checks that each is applied and, once st is synced, reported
// to applied.
// The transactions fed are those after zxid from (a leader may resend
// some that its fuzzy snapshot holds). With syncAt not 0, UpToDate is
// called once zxid syncAt is applied.
func replayLogs(t *testing.T, st *State, dir string, applied *[]Applied, from, syncAt int64) replayStats {
	t.Helper()
	stats := replayStats{types: make(map[string]int)}
	for _, path := range zkFiles(t, dir, "log") {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		err = zkimport.ReadLogEntries(f, filepath.Base(path), func(entry []byte) error {
			txn, err := zkimport.DecodeTxn(entry)
			if err != nil {
				return err
			}
			zxid := txn.Header.Zxid
			if uint64(zxid) <= uint64(from) {
				return nil
			}
			before, synced, last := len(*applied), st.Synced(), st.LastZxid()
			if err := st.Txn(zxid, entry); err != nil {
				return err
			}
			reported := len(*applied) == before+1 && (*applied)[before].Zxid == zxid
			if !synced {
				reported = len(*applied) == before // nothing is reported while catching up
			}
			if st.LastZxid() != max(last, zxid) || !reported {
				t.Fatalf("zxid %#x: LastZxid %#x, %d reports", zxid, st.LastZxid(), len(*applied)-before)
			}
			if zxid == syncAt {
				st.UpToDate()
				if err := st.Err(); err != nil {
					return err
				}
			}
			stats.txns++
			if txn.Digest != nil {
				stats.digests++
			}
			stats.types[txnKind(txn)]++
			return nil
		})
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
	}
	return stats
}

// txnKind names a transaction for the coverage count: its type, and for
// a multi whether it failed.
func txnKind(t *zkimport.Txn) string {
	if t.Header.Type != jute.OpMulti {
		return t.Header.Type.String()
	}
	if failedMulti(t.Multi) {
		return "multi-failed"
	}
	return "multi"
}

// storedNodes returns every node of tree by path.
func storedNodes(t *testing.T, tree *datatree.Tree) map[string]datatree.StoredNode {
	t.Helper()
	m := make(map[string]datatree.StoredNode)
	if err := tree.Walk(func(n datatree.StoredNode) error {
		m[n.Path] = n
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// compareImage checks st against a state ZooKeeper's own restore logic
// (zkimport) produced: every node with data, ACL and stored stat, and
// every session with its timeout.
func compareImage(t *testing.T, st *State, img *zkimport.Image) {
	t.Helper()
	got := storedNodes(t, st.Tree())
	for _, n := range img.Nodes {
		g, ok := got[n.Path]
		if !ok {
			t.Errorf("%s: missing from the mirror", n.Path)
			continue
		}
		delete(got, n.Path)
		w := datatree.StoredNode{Path: n.Path, Data: n.Data, ACL: n.ACL,
			Czxid: n.Stat.Czxid, Mzxid: n.Stat.Mzxid, Ctime: n.Stat.Ctime, Mtime: n.Stat.Mtime, Pzxid: n.Stat.Pzxid,
			Version: n.Stat.Version, Cversion: n.Stat.Cversion, Aversion: n.Stat.Aversion,
			EphemeralOwner: n.Stat.EphemeralOwner}
		if isStatsNode(n.Path) {
			continue // quota statistics: compared with the live read
		}
		if !sameStored(g, w) {
			t.Errorf("%s:\n mirror   %+v\n restored %+v", n.Path, g, w)
		}
	}
	for p := range got {
		t.Errorf("%s: in the mirror only", p)
	}
	var want []string
	for id, timeout := range img.Sessions {
		want = append(want, strconv.FormatInt(id, 16)+"/"+strconv.Itoa(int(timeout)))
	}
	var have []string
	for _, s := range st.Sessions().All() {
		have = append(have, strconv.FormatInt(s.ID, 16)+"/"+strconv.Itoa(int(s.Timeout)))
	}
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(want, have) {
		t.Errorf("sessions (id/timeout): mirror %v, restored %v", have, want)
	}
}

// isStatsNode reports whether p is a quota statistics node, whose data
// ZooKeeper recounts when it loads a snapshot.
func isStatsNode(p string) bool {
	return strings.HasPrefix(p, "/zookeeper/quota/") && strings.HasSuffix(p, "/zookeeper_stats")
}

func sameStored(a, b datatree.StoredNode) bool {
	return bytes.Equal(a.Data, b.Data) && (a.Data == nil) == (b.Data == nil) && slices.Equal(a.ACL, b.ACL) &&
		a.Czxid == b.Czxid && a.Mzxid == b.Mzxid && a.Ctime == b.Ctime && a.Mtime == b.Mtime &&
		a.Pzxid == b.Pzxid && a.Version == b.Version && a.Cversion == b.Cversion &&
		a.Aversion == b.Aversion && a.EphemeralOwner == b.EphemeralOwner
}

// compareLive checks st's tree against what clients read from the
// running ZooKeeper: the same nodes, each with its data, ACL and Stat.
func compareLive(t *testing.T, st *State, live []liveNode) {
	t.Helper()
	tree := st.Tree()
	got := storedNodes(t, tree)
	for _, n := range live {
		if _, ok := got[n.Path]; !ok {
			t.Errorf("%s: missing from the mirror", n.Path)
			continue
		}
		delete(got, n.Path)
		data, stat, code := tree.GetData(n.Path, nil, nil)
		acl, _, _ := tree.GetACL(n.Path, nil)
		if code != jute.OK {
			t.Errorf("%s: %s", n.Path, code)
			continue
		}
		var want []byte
		if n.Data != nil {
			var err error
			if want, err = base64.StdEncoding.DecodeString(*n.Data); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(data, want) || (data == nil) != (n.Data == nil) {
			t.Errorf("%s: data %q, ZooKeeper's %q", n.Path, data, want)
		}
		if gs := toZKStat(stat); gs != n.Stat {
			t.Errorf("%s: stat\n mirror    %+v\n ZooKeeper %+v", n.Path, gs, n.Stat)
		}
		if !sameACL(acl, n.ACL) {
			t.Errorf("%s: acl %v, ZooKeeper's %v", n.Path, acl, n.ACL)
		}
	}
	for p := range got {
		t.Errorf("%s: in the mirror only", p)
	}
}

func toZKStat(s jute.Stat) zk.Stat {
	return zk.Stat{Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version,
		Cversion: s.Cversion, Aversion: s.Aversion, EphemeralOwner: s.EphemeralOwner,
		DataLength: s.DataLength, NumChildren: s.NumChildren, Pzxid: s.Pzxid}
}

func sameACL(a []jute.ACL, b []zk.ACL) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Perms != b[i].Perms || a[i].ID.Scheme != b[i].Scheme || a[i].ID.ID != b[i].ID {
			return false
		}
	}
	return true
}

// loadLive reads a live.json file.
func loadLive(t *testing.T, path string) []liveNode {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []liveNode
	if err := json.Unmarshal(b, &nodes); err != nil {
		t.Fatal(err)
	}
	return nodes
}

// checkDataDir runs the whole check on one ZooKeeper data directory (its
// version-2 directory) and the live read taken before ZooKeeper stopped:
// the first snapshot, every logged transaction after it, then the mirror
// compared with zkimport's restore of the directory and with the live
// read. It returns what the replay went through.
func checkDataDir(t *testing.T, dir string, live []liveNode) replayStats {
	t.Helper()
	var applied []Applied
	st := New(Options{Logger: testLogger(t), Applied: func(a Applied) { applied = append(applied, a) }})
	snaps := zkFiles(t, dir, "snapshot")
	if len(snaps) == 0 {
		t.Fatalf("no snapshot in %s", dir)
	}
	loadSnapshotFile(t, st, snaps[0])
	st.UpToDate()
	stats := replayLogs(t, st, dir, &applied, st.LastZxid(), 0)
	if err := st.Err(); err != nil || !st.Synced() {
		t.Fatalf("after the replay: err %v, synced %v", err, st.Synced())
	}
	img, err := zkimport.ReadDataDir(dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.LastZxid() != img.LastZxid {
		t.Errorf("last zxid %#x, ZooKeeper's restore %#x", st.LastZxid(), img.LastZxid)
	}
	compareImage(t, st, img)
	compareLive(t, st, live)
	t.Logf("%d transactions (%d with a digest) after %s: %v", stats.txns, stats.digests, filepath.Base(snaps[0]), stats.types)
	return stats
}
