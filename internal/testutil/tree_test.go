package testutil_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
)

// TestReadTree: every znode comes back once, parents first and siblings in
// name order, with its data (base64, or null), ACL and stat.
func TestReadTree(t *testing.T) {
	srv := servertest.Start(t, server.Options{Config: testutil.Config(t.TempDir())})
	c, _ := testutil.Connect(t, srv.Addr().String(), 10*time.Second)
	open := zk.WorldACL(zk.PermAll)
	readOnly := zk.WorldACL(zk.PermRead)
	for _, n := range []struct {
		path string
		data []byte
		acl  []zk.ACL
	}{
		{"/b", []byte("bee"), readOnly},
		{"/a", nil, open},
		{"/a/y", []byte{}, open},
		{"/a/x", []byte{0, 1, 2}, open},
	} {
		if _, err := c.Create(n.path, n.data, 0, n.acl); err != nil {
			t.Fatalf("create %s: %v", n.path, err)
		}
	}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	tests := []struct {
		path string
		data *string
		acl  []zk.ACL
		kids int32
	}{
		{"/", ptr(""), nil, 3},
		{"/a", nil, open, 2},
		{"/a/x", ptr(b64([]byte{0, 1, 2})), open, 0},
		{"/a/y", ptr(""), open, 0},
		{"/b", ptr(b64([]byte("bee"))), readOnly, 0},
		{"/zookeeper", ptr(""), nil, -1},
	}
	got := testutil.ReadTree(t, c)
	var paths []string
	for _, n := range got {
		paths = append(paths, n.Path)
	}
	for i, w := range tests {
		if i >= len(got) || got[i].Path != w.path {
			t.Fatalf("read %v, want the paths of %+v first", paths, tests)
		}
		g := got[i]
		if (g.Data == nil) != (w.data == nil) || (g.Data != nil && *g.Data != *w.data) {
			t.Errorf("%s data = %v, want %v", w.path, g.Data, w.data)
		}
		if w.acl != nil && (len(g.ACL) != 1 || g.ACL[0] != w.acl[0]) {
			t.Errorf("%s acl = %v, want %v", w.path, g.ACL, w.acl)
		}
		if w.kids >= 0 && g.Stat.NumChildren != w.kids {
			t.Errorf("%s has %d children, want %d", w.path, g.Stat.NumChildren, w.kids)
		}
	}
}

func ptr(s string) *string { return &s }
