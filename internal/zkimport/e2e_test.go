package zkimport_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/internal/zkimport"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
)

// goldenNode is one znode as a real ZooKeeper 3.8 reported it to a client
// (testdata/gen produced the file).
type goldenNode struct {
	Path string   `json:"path"`
	Data *string  `json:"data"`
	ACL  []zk.ACL `json:"acl"`
	Stat zk.Stat  `json:"stat"`
	Kind string   `json:"kind"`
}

func loadGolden(t *testing.T) []goldenNode {
	t.Helper()
	b, err := os.ReadFile("testdata/zk38/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var nodes []goldenNode
	if err := json.Unmarshal(b, &nodes); err != nil {
		t.Fatal(err)
	}
	return nodes
}

// expectedAfterImport removes the ephemerals from the golden tree: their
// sessions are gone, so for each one the parent loses a child and its
// visible cversion counts one more change (2*creates - children), exactly
// as when ZooKeeper expires a session. Nothing else changes.
func expectedAfterImport(golden []goldenNode) (map[string]goldenNode, int) {
	want := make(map[string]goldenNode)
	for _, n := range golden {
		want[n.Path] = n
	}
	dropped := 0
	for _, n := range golden {
		if n.Kind != "ephemeral" {
			continue
		}
		dropped++
		delete(want, n.Path)
		parent := want[path.Dir(n.Path)]
		parent.Stat.NumChildren--
		parent.Stat.Cversion++
		want[parent.Path] = parent
	}
	return want, dropped
}

func startServer(t *testing.T, dataDir string) string {
	t.Helper()
	cfg := testutil.Config(dataDir)
	cfg.ExtendedTypesEnabled = true
	cfg.ContainerCheckIntervalMs = int(time.Hour / time.Millisecond) // keep /c2 and /ttl
	return servertest.Start(t, server.Options{Config: cfg}).Addr().String()
}

func TestImportZooKeeper38EndToEnd(t *testing.T) {
	golden := loadGolden(t)
	want, ephemerals := expectedAfterImport(golden)
	to := t.TempDir()
	var progress bytes.Buffer
	sum, err := zkimport.Import(zkimport.Options{From: "testdata/zk38", To: to, Progress: &progress})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if sum.Nodes != len(want) || sum.EphemeralsDropped != ephemerals {
		t.Errorf("summary nodes=%d ephemerals=%d, want %d and %d", sum.Nodes, sum.EphemeralsDropped, len(want), ephemerals)
	}
	if sum.SessionsDropped != 2 {
		t.Errorf("sessions dropped = %d, want 2 (the generator's two live sessions)", sum.SessionsDropped)
	}
	var maxZxid int64
	for _, n := range golden {
		maxZxid = max(maxZxid, n.Stat.Mzxid, n.Stat.Pzxid)
	}
	if sum.LastZxid < maxZxid {
		t.Errorf("last zxid %#x below the tree's newest change %#x", sum.LastZxid, maxZxid)
	}
	if !bytes.Contains(progress.Bytes(), []byte("writing the zkserverd snapshot")) {
		t.Errorf("no progress reported:\n%s", progress.String())
	}

	// The log store is raft-boltdb (logStore=boltdb), as the importer has
	// always written it.
	if _, err := os.Stat(filepath.Join(to, "version-2", "raft", "raft.db")); err != nil {
		t.Errorf("no raft-boltdb log store: %v", err)
	}

	t.Logf("summary: %+v\n%s", *sum, progress.String())
	c, _ := testutil.Connect(t, startServer(t, to), 10*time.Second)
	if err := c.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	got := make(map[string]testutil.Znode)
	for _, n := range testutil.ReadTree(t, c) {
		got[n.Path] = n
	}
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			t.Errorf("%s missing after import", p)
			continue
		}
		if (g.Data == nil) != (w.Data == nil) || (g.Data != nil && *g.Data != *w.Data) {
			t.Errorf("%s data = %v, want %v", p, deref(g.Data), deref(w.Data))
		}
		if !slices.Equal(g.ACL, w.ACL) {
			t.Errorf("%s acl = %v, want %v", p, g.ACL, w.ACL)
		}
		if g.Stat != w.Stat {
			t.Errorf("%s stat =\n %+v, want\n %+v", p, g.Stat, w.Stat)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("unexpected node %s after import", p)
		}
	}

	// The imported server keeps going: new writes get later zxids.
	if _, err := c.Create("/after-import", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get("/after-import")
	if err != nil {
		t.Fatal(err)
	}
	if st.Czxid <= sum.LastZxid {
		t.Errorf("new node czxid %#x not after the imported zxid %#x", st.Czxid, sum.LastZxid)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
