package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/acl"
	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server/ops"
)

// backupAuth is the Authorization the backup tests send: the super
// digest every member is configured with.
const backupAuth = "digest super:secret"

// backupTweak gives members the super digest and no rate limit on the
// snapshot and restore commands.
func backupTweak(cfg *conf.Config) {
	cfg.SuperDigest = acl.Digest("super:secret")
	cfg.Extra["admin.rateLimiterIntervalInMS"] = "0"
}

// adminCall sends one request to member i's AdminServer.
func adminCall(t *testing.T, e *ensemble, i int, method, command string, body []byte) (int, []byte) {
	t.Helper()
	url := "http://" + e.Member(i).ops.AdminAddr().String() + "/commands/" + command
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", backupAuth)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// clientView lists every znode a client of addr reads below "/" (but
// /zookeeper/config, which a restore keeps the ensemble's own of) with
// its data and stat, one line each, in path order.
func clientView(t *testing.T, addr string) string {
	t.Helper()
	c, _ := testutil.Connect(t, addr, 10*time.Second)
	defer c.Close()
	// u:p may read the node of its own ACL that populateVaried writes.
	if err := c.AddAuth("digest", []byte("u:p")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync("/"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(p string)
	walk = func(p string) {
		if p == "/zookeeper/config" {
			return
		}
		data, st, err := c.Get(p)
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		fmt.Fprintf(&b, "%s %q %d %d %d %d %d %d %d %#x %d %d %d\n", p, data, st.Czxid, st.Mzxid, st.Ctime, st.Mtime,
			st.Version, st.Cversion, st.Aversion, st.EphemeralOwner, st.DataLength, st.NumChildren, st.Pzxid)
		kids, _, err := c.Children(p)
		if err != nil {
			t.Fatalf("children %s: %v", p, err)
		}
		for _, k := range sortedStrings(kids) {
			walk(path.Join(p, k))
		}
	}
	walk("/")
	return b.String()
}

// treeView is clientView of a decoded backup's tree.
func treeView(t *testing.T, tree *datatree.Tree) string {
	t.Helper()
	var b strings.Builder
	var walk func(p string)
	walk = func(p string) {
		if p == "/zookeeper/config" {
			return
		}
		data, st, code := tree.GetData(p, nil, nil)
		if code != 0 {
			t.Fatalf("backup tree: %s: %v", p, code)
		}
		fmt.Fprintf(&b, "%s %q %d %d %d %d %d %d %d %#x %d %d %d\n", p, data, st.Czxid, st.Mzxid, st.Ctime, st.Mtime,
			st.Version, st.Cversion, st.Aversion, st.EphemeralOwner, st.DataLength, st.NumChildren, st.Pzxid)
		kids, _, _ := tree.GetChildren(p, nil, nil)
		for _, k := range sortedStrings(kids) {
			walk(path.Join(p, k))
		}
	}
	walk("/")
	return b.String()
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestBackupUnderLoadRestoresIntoFreshEnsemble backs up a follower of a
// 3-member ensemble in both formats while clients write to it, and again
// once they stopped (those backups must show exactly what the source's
// clients read), and restores each backup into a fresh 3-member
// ensemble: a follower refuses and names the leader, the leader installs
// it through the log, and every member then shows every znode and stat
// of the backup.
func TestBackupUnderLoadRestoresIntoFreshEnsemble(t *testing.T) {
	src := testutil.StartEnsemble(t, ensembleSpec(t, 3, backupTweak))
	follower := (src.Leader() + 1) % 3

	// Write load: creates (persistent, sequential, ephemeral), sets and
	// deletes from four clients, until stopped or 20 s have passed.
	ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	var wg sync.WaitGroup
	var writes sync.Map
	for w := range 4 {
		c, _ := testutil.Connect(t, src.Addr(w%3), 10*time.Second)
		base := fmt.Sprintf("/load%d", w)
		if _, err := c.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				p := fmt.Sprintf("%s/n%04d", base, i)
				c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll))
				c.Create(base+"/seq-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
				c.Create(fmt.Sprintf("%s/eph%04d", base, i), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermRead))
				c.Set(p, []byte("v2"), -1)
				if i%3 == 0 {
					c.Delete(p, -1)
				}
				writes.Store(w, i)
			}
		}()
	}
	testutil.Eventually(t, 15*time.Second, "writers under way", func() bool {
		n := 0
		writes.Range(func(_, v any) bool { n += v.(int); return true })
		return n > 100
	})
	snapshot := func(format string) []byte {
		t.Helper()
		status, body := adminCall(t, src, follower, "GET", "snapshot?format="+format, nil)
		if status != http.StatusOK {
			t.Fatalf("snapshot %s: %d %s", format, status, body)
		}
		return body
	}
	type backup struct {
		name, format string
		body         []byte
		want         string // the client view it must restore to ("": its own tree's)
	}
	var backups []backup
	for _, format := range []string{"zkserverd", "zookeeper"} {
		backups = append(backups, backup{name: format + " under load", format: format, body: snapshot(format)})
	}
	stop()
	wg.Wait()
	// Quiet now: a backup must show what the source's clients read.
	srcView := clientView(t, src.Addr(follower))
	for _, format := range []string{"zookeeper", "zkserverd"} {
		backups = append(backups, backup{name: format + " quiet", format: format, body: snapshot(format), want: srcView})
	}

	dst := testutil.StartEnsemble(t, ensembleSpec(t, 3, backupTweak))
	lead := dst.Leader()
	for _, b := range backups {
		st, got, err := ops.DecodeBackup(bytes.NewReader(b.body))
		if err != nil || got != b.format {
			t.Fatalf("%s backup decodes as %q: %v", b.name, got, err)
		}
		want := treeView(t, st.Tree)
		if b.want != "" && want != b.want {
			t.Fatalf("the %s backup differs from the source:\n%s", b.name, firstDiff(want, b.want))
		}
		if !strings.Contains(want, "/load3/eph") || strings.Count(want, "\n") < 100 {
			t.Fatalf("%s backup holds too little:\n%s", b.name, want)
		}
		status, body := adminCall(t, dst, (lead+1)%3, "POST", "restore", b.body)
		var reply map[string]any
		json.Unmarshal(body, &reply)
		if status != http.StatusServiceUnavailable || reply["leader_id"] != float64(lead+1) {
			t.Fatalf("restore on a follower: %d %s, want 503 naming leader %d", status, body, lead+1)
		}
		if status, body := adminCall(t, dst, lead, "POST", "restore", b.body); status != http.StatusOK {
			t.Fatalf("restore %s on the leader: %d %s", b.name, status, body)
		}
		for i := range 3 {
			var view string
			deadline := time.Now().Add(15 * time.Second)
			for view = clientView(t, dst.Addr(i)); view != want && time.Now().Before(deadline); view = clientView(t, dst.Addr(i)) {
				time.Sleep(50 * time.Millisecond)
			}
			if view != want {
				t.Fatalf("member %d after restoring the %s backup differs from it:\n%s", i+1, b.name, firstDiff(view, want))
			}
		}
	}
	// The restored ensemble takes writes.
	c, _ := testutil.Connect(t, dst.Addr((lead+2)%3), 10*time.Second)
	if _, err := c.Create("/after-restore", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("write after restore: %v", err)
	}
	// The restored sessions' clients are connected to the source, not
	// here: the leader's expiry clock knows them from the restore, so
	// they expire and their ephemerals go.
	testutil.Eventually(t, 40*time.Second, "the restored sessions to expire", func() bool {
		kids, _, err := c.Children("/load3")
		if err != nil {
			return false
		}
		for _, k := range kids {
			if strings.HasPrefix(k, "eph") {
				return false
			}
		}
		return true
	})
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, gl, wl)
		}
	}
	return "(no difference)"
}
