package test

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

func TestCRUD(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	c, _ := testutil.Connect(t, srv.Addr().String(), 4*time.Second)
	acl := zk.WorldACL(zk.PermAll)

	path, err := c.Create("/app", []byte("v0"), 0, acl)
	if err != nil || path != "/app" {
		t.Fatalf("create /app = %q, %v", path, err)
	}
	if _, err := c.Create("/app", nil, 0, acl); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create twice: %v, want ErrNodeExists", err)
	}
	if _, err := c.Create("/missing/child", nil, 0, acl); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("create under missing parent: %v, want ErrNoNode", err)
	}
	data, st, err := c.Get("/app")
	if err != nil || string(data) != "v0" || st.Version != 0 || st.DataLength != 2 {
		t.Fatalf("get = %q %+v %v", data, st, err)
	}
	if st.Czxid != st.Mzxid || st.Czxid != st.Pzxid || st.Ctime != st.Mtime || st.Ctime == 0 {
		t.Fatalf("fresh node stat inconsistent: %+v", st)
	}
	st2, err := c.Set("/app", []byte("v1"), 0)
	if err != nil || st2.Version != 1 || st2.Mzxid <= st.Mzxid || st2.Czxid != st.Czxid {
		t.Fatalf("set = %+v %v", st2, err)
	}
	if _, err := c.Set("/app", []byte("v2"), 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("set with stale version: %v, want ErrBadVersion", err)
	}
	if _, err := c.Create("/app/a", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/app/b", []byte{}, 0, acl); err != nil {
		t.Fatal(err)
	}
	kids, st3, err := c.Children("/app")
	sort.Strings(kids)
	if err != nil || fmt.Sprint(kids) != "[a b]" || st3.NumChildren != 2 || st3.Cversion != 2 {
		t.Fatalf("children = %v %+v %v", kids, st3, err)
	}
	if err := c.Delete("/app", -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Fatalf("delete non-empty: %v, want ErrNotEmpty", err)
	}
	if err := c.Delete("/app/a", 5); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("delete bad version: %v, want ErrBadVersion", err)
	}
	if err := c.Delete("/app/a", 0); err != nil {
		t.Fatal(err)
	}
	ok, st4, err := c.Exists("/app")
	if err != nil || !ok || st4.NumChildren != 1 || st4.Cversion != 3 || st4.Pzxid <= st3.Pzxid {
		t.Fatalf("exists after child delete = %v %+v %v (cversion counts creates+deletes)", ok, st4, err)
	}
	if ok, _, err := c.Exists("/nope"); ok || err != nil {
		t.Fatalf("exists /nope = %v %v", ok, err)
	}
	if _, _, err := c.Get("/nope"); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("get /nope: %v", err)
	}
	if _, err := c.Create("bad", nil, 0, acl); err == nil {
		t.Fatal("create with a relative path succeeded")
	}
	got, _, err := c.GetACL("/app")
	if err != nil || len(got) != 1 || got[0].Scheme != "world" || got[0].ID != "anyone" || got[0].Perms != zk.PermAll {
		t.Fatalf("getACL = %+v %v", got, err)
	}
}

func TestSystemNodes(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	c, _ := testutil.Connect(t, srv.Addr().String(), 4*time.Second)
	kids, st, err := c.Children("/zookeeper")
	sort.Strings(kids)
	if err != nil || fmt.Sprint(kids) != "[config quota]" || st.Cversion != -2 {
		t.Fatalf("/zookeeper children = %v cversion %d %v", kids, st.Cversion, err)
	}
	_, st, err = c.Get("/")
	if err != nil || st.Cversion != -1 || st.NumChildren != 1 {
		t.Fatalf("root stat = %+v %v", st, err)
	}
	if err := c.Delete("/zookeeper", -1); !errors.Is(err, zk.ErrBadArguments) {
		t.Fatalf("delete /zookeeper: %v, want ErrBadArguments", err)
	}
}

func TestSequentialNames(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	c, _ := testutil.Connect(t, srv.Addr().String(), 4*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create("/q", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/q/plain", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i < 3; i++ {
		p, err := c.Create("/q/item-", nil, zk.FlagSequence, acl)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p)
	}
	want := []string{"/q/item-0000000001", "/q/item-0000000002", "/q/item-0000000003"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("sequential names = %v, want %v (the counter is shared by all children)", names, want)
	}
	if err := c.Delete(names[2], -1); err != nil {
		t.Fatal(err)
	}
	p, err := c.Create("/q/item-", nil, zk.FlagSequence|zk.FlagEphemeral, acl)
	if err != nil || p != "/q/item-0000000004" {
		t.Fatalf("after delete = %q %v; numbers are never reused", p, err)
	}
}

func TestEphemeralRemovedOnClose(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	owner, _ := testutil.Connect(t, srv.Addr().String(), 4*time.Second)
	watcher, _ := testutil.Connect(t, srv.Addr().String(), 4*time.Second)
	if _, err := owner.Create("/lock", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, st, err := watcher.Get("/lock")
	if err != nil || st.EphemeralOwner != owner.SessionID() {
		t.Fatalf("ephemeral owner = %x, session %x, %v", st.EphemeralOwner, owner.SessionID(), err)
	}
	if _, err := owner.Create("/lock/child", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
		t.Fatalf("child of ephemeral: %v", err)
	}
	owner.Close()
	ok, _, err := watcher.Exists("/lock")
	if err != nil || ok {
		t.Fatalf("ephemeral still there after close: %v %v", ok, err)
	}
}

func TestEphemeralRemovedOnExpiry(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	addr := srv.Addr().String()
	raw := dialRaw(t, addr)
	resp, err := raw.handshake(jute.ConnectRequest{TimeOut: 400, HasReadOnly: true})
	if err != nil || resp.SessionID == 0 || resp.TimeOut != 400 {
		t.Fatalf("handshake = %+v %v", resp, err)
	}
	h, _ := raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/eph", ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral})
	if h.Err != jute.OK {
		t.Fatalf("create ephemeral: %v", h.Err)
	}
	other, _ := testutil.Connect(t, addr, 4*time.Second)
	start := time.Now()
	// The raw client now stays silent: no pings. The server must expire the
	// session between timeout and timeout+tick, close the connection, and
	// delete the ephemeral.
	raw.expectClosed(5 * time.Second)
	if el := time.Since(start); el < 350*time.Millisecond {
		t.Fatalf("session expired after %v, before its 400ms timeout", el)
	}
	testutil.Eventually(t, 5*time.Second, "ephemeral deleted", func() bool {
		ok, _, err := other.Exists("/eph")
		return err == nil && !ok
	})
	again := dialRaw(t, addr)
	r2, err := again.handshake(jute.ConnectRequest{SessionID: resp.SessionID, Passwd: resp.Passwd, TimeOut: 400})
	if err != nil || r2.SessionID != 0 || r2.TimeOut != 0 {
		t.Fatalf("resume of an expired session = %+v %v, want the zeroed response", r2, err)
	}
	again.expectClosed(2 * time.Second)
}

func TestSessionResume(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	addr := srv.Addr().String()
	first := dialRaw(t, addr)
	resp, err := first.handshake(jute.ConnectRequest{TimeOut: 2000})
	if err != nil || resp.SessionID == 0 {
		t.Fatalf("handshake: %+v %v", resp, err)
	}
	if h, _ := first.call(jute.OpCreate, &jute.CreateRequest{Path: "/mine", ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral}); h.Err != jute.OK {
		t.Fatalf("create: %v", h.Err)
	}
	// A wrong password is refused with the zeroed response, and (quirk) the
	// live connection of the session is closed first.
	bad := dialRaw(t, addr)
	wrong := bytes.Repeat([]byte{7}, 16)
	r, err := bad.handshake(jute.ConnectRequest{SessionID: resp.SessionID, Passwd: wrong, TimeOut: 2000})
	if err != nil || r.SessionID != 0 || r.TimeOut != 0 || !bytes.Equal(r.Passwd, make([]byte, 16)) {
		t.Fatalf("wrong password = %+v %v", r, err)
	}
	bad.expectClosed(2 * time.Second)
	first.expectClosed(2 * time.Second)
	// The right password resumes the same session with its ephemeral.
	second := dialRaw(t, addr)
	r, err = second.handshake(jute.ConnectRequest{SessionID: resp.SessionID, Passwd: resp.Passwd, TimeOut: 1500})
	if err != nil || r.SessionID != resp.SessionID || !bytes.Equal(r.Passwd, resp.Passwd) || r.TimeOut != 1500 {
		t.Fatalf("resume = %+v %v", r, err)
	}
	h, body := second.call(jute.OpExists, &jute.PathWatchRequest{Path: "/mine"})
	var st jute.StatResponse
	if h.Err != jute.OK || jute.Decode(body, &st) != nil || st.Stat.EphemeralOwner != resp.SessionID {
		t.Fatalf("ephemeral after resume: %v %+v", h.Err, st)
	}
}

func TestMulti(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	c, _ := testutil.Connect(t, srv.Addr().String(), 4*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	res, err := c.Multi(
		&zk.CreateRequest{Path: "/m", Data: []byte("x"), Acl: acl},
		&zk.CreateRequest{Path: "/m/c", Acl: acl},
		&zk.SetDataRequest{Path: "/m", Data: []byte("y"), Version: 0},
		&zk.CheckVersionRequest{Path: "/m", Version: 1},
		&zk.DeleteRequest{Path: "/m/c", Version: 0},
	)
	if err != nil || len(res) != 5 || res[0].String != "/m" || res[2].Stat == nil || res[2].Stat.Version != 1 {
		t.Fatalf("multi = %+v %v", res, err)
	}
	_, before, _ := c.Get("/m")
	res, err = c.Multi(
		&zk.SetDataRequest{Path: "/m", Data: []byte("z"), Version: -1},
		&zk.CheckVersionRequest{Path: "/m", Version: 99},
		&zk.CreateRequest{Path: "/m/d", Acl: acl},
	)
	if !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("failed multi error = %v, want ErrBadVersion", err)
	}
	if len(res) != 3 || res[0].Error != nil || !errors.Is(res[1].Error, zk.ErrBadVersion) || !errors.Is(res[2].Error, zk.ErrAPIError) && res[2].Error == nil {
		t.Fatalf("failed multi results = %+v", res)
	}
	data, after, _ := c.Get("/m")
	if string(data) != "y" || after.Version != before.Version || after.Mzxid != before.Mzxid {
		t.Fatalf("failed multi changed state: %q %+v", data, after)
	}
	if ok, _, _ := c.Exists("/m/d"); ok {
		t.Fatal("failed multi created /m/d")
	}
}

// TestFailedWritesConsumeZxid checks ZooKeeper's rule that a rejected write
// is still logged and advances the zxid, while reads do not.
func TestFailedWritesConsumeZxid(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	raw := dialRaw(t, srv.Addr().String())
	if _, err := raw.handshake(jute.ConnectRequest{TimeOut: 4000}); err != nil {
		t.Fatal(err)
	}
	h1, _ := raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/z", ACL: jute.OpenACLUnsafe})
	h2, _ := raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/z", ACL: jute.OpenACLUnsafe})
	h3, _ := raw.call(jute.OpGetData, &jute.PathWatchRequest{Path: "/z"})
	h4, _ := raw.call(jute.OpDelete, &jute.DeleteRequest{Path: "/nope", Version: -1})
	if h1.Err != jute.OK || h2.Err != jute.NodeExists || h4.Err != jute.NoNode {
		t.Fatalf("codes = %v %v %v", h1.Err, h2.Err, h4.Err)
	}
	if h2.Zxid != h1.Zxid+1 || h3.Zxid != h2.Zxid || h4.Zxid != h2.Zxid+1 {
		t.Fatalf("zxids = %d %d %d %d; want failed writes to take one each and reads none", h1.Zxid, h2.Zxid, h3.Zxid, h4.Zxid)
	}
}
