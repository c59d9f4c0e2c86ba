package testutil

import (
	"encoding/base64"
	"path"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
)

// Znode is one znode as a go-zookeeper client reads it; the JSON names
// are those of the recorded reads under testdata.
type Znode struct {
	Path string   `json:"path"`
	Data *string  `json:"data"` // base64; null for a null buffer
	ACL  []zk.ACL `json:"acl"`
	Stat zk.Stat  `json:"stat"`
}

// ReadTree reads every znode reachable from "/" through c (getData,
// getACL, getChildren each), parents before children and siblings in name
// order; any failed request fails the test.
func ReadTree(t testing.TB, c *zk.Conn) []Znode {
	t.Helper()
	var out []Znode
	var visit func(p string)
	visit = func(p string) {
		data, st, err := c.Get(p)
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		acl, _, err := c.GetACL(p)
		if err != nil {
			t.Fatalf("getACL %s: %v", p, err)
		}
		n := Znode{Path: p, ACL: acl, Stat: *st}
		if data != nil {
			s := base64.StdEncoding.EncodeToString(data)
			n.Data = &s
		}
		out = append(out, n)
		kids, _, err := c.Children(p)
		if err != nil {
			t.Fatalf("children %s: %v", p, err)
		}
		slices.Sort(kids)
		for _, k := range kids {
			visit(path.Join(p, k))
		}
	}
	visit("/")
	return out
}
