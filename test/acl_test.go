package test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/acl"
	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
)

// End-to-end tests of ACL enforcement and authentication, through go-zookeeper and, where the library hides the wire, the
// raw client.

// aclConfig is a standalone configuration with a one-second tick (sessions
// of up to 20s, so idle raw sessions survive a long test), no fsync and no
// admin server (whose fixed port parallel servers would share).
func aclConfig(t *testing.T) conf.Config {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	cfg.TickTime = 1000
	cfg.ForceSync = false
	cfg.AdminEnableServer = false
	return cfg
}

// aclConnect opens a go-zookeeper session and adds each digest credential.
func aclConnect(t *testing.T, addr string, creds ...string) *zk.Conn {
	t.Helper()
	c, _ := testutil.Connect(t, addr, 15*time.Second)
	for _, cred := range creds {
		if err := c.AddAuth("digest", []byte(cred)); err != nil {
			t.Fatalf("addauth digest %s: %v", cred, err)
		}
	}
	return c
}

// aclSession opens a raw session and adds each digest credential.
func aclSession(t *testing.T, addr string, creds ...string) *rawClient {
	t.Helper()
	r := dialRaw(t, addr)
	if _, err := r.handshake(jute.ConnectRequest{TimeOut: 20000}); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	for _, cred := range creds {
		if h := aclAuth(t, r, "digest", cred); h.Err != jute.OK {
			t.Fatalf("addauth digest %s: %v", cred, h.Err)
		}
	}
	return r
}

// aclAuth sends an auth packet with the xid clients use (-4) and returns
// the reply header.
func aclAuth(t *testing.T, r *rawClient, scheme, auth string) jute.ReplyHeader {
	t.Helper()
	r.send(&jute.RequestHeader{Xid: jute.XidAuth, Type: jute.OpAuth}, &jute.AuthPacket{Scheme: scheme, Auth: []byte(auth)})
	for {
		b, err := r.readFrame(20 * time.Second)
		if err != nil {
			t.Fatalf("auth %s: read reply: %v", scheme, err)
		}
		var h jute.ReplyHeader
		h.Decode(jute.NewDecoder(b))
		if h.Xid != jute.XidNotification {
			return h
		}
	}
}

// aclWhoAmI asks the server who the raw connection is.
func aclWhoAmI(t *testing.T, r *rawClient) []jute.ClientInfo {
	t.Helper()
	h, body := r.call(jute.OpWhoAmI, nil)
	if h.Err != jute.OK {
		t.Fatalf("whoAmI: %v", h.Err)
	}
	var resp jute.WhoAmIResponse
	if err := jute.Decode(body, &resp); err != nil {
		t.Fatalf("whoAmI: decode: %v", err)
	}
	return resp.ClientInfo
}

// zkCodes maps go-zookeeper's errors back to wire codes.
var zkCodes = []struct {
	err  error
	code jute.Code
}{
	{zk.ErrNoNode, jute.NoNode},
	{zk.ErrNoAuth, jute.NoAuth},
	{zk.ErrBadVersion, jute.BadVersion},
	{zk.ErrInvalidACL, jute.InvalidACL},
	{zk.ErrNodeExists, jute.NodeExists},
	{zk.ErrNotEmpty, jute.NotEmpty},
	{zk.ErrAuthFailed, jute.AuthFailed},
	{zk.ErrBadArguments, jute.BadArguments},
}

// zkCode is the wire code behind a go-zookeeper error (OK for nil).
func zkCode(t *testing.T, err error) jute.Code {
	t.Helper()
	if err == nil {
		return jute.OK
	}
	for _, e := range zkCodes {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	t.Fatalf("unexpected client error: %v", err)
	return jute.OK
}

// digestEntry is an ACL entry for the digest user of "user:password".
func digestEntry(perms int32, userPassword string) zk.ACL {
	return zk.ACL{Perms: perms, Scheme: "digest", ID: acl.Digest(userPassword)}
}

// mustCreate creates a node or fails the test.
func mustCreate(t *testing.T, c *zk.Conn, path string, acls []zk.ACL) {
	t.Helper()
	if _, err := c.Create(path, []byte("v"), 0, acls); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// aclActor is one client, authenticated the same way on a go-zookeeper
// session and on a raw connection (for opcodes the library lacks).
type aclActor struct {
	zk  *zk.Conn
	raw *rawClient
}

// aclOp is an operation of the permission matrix.
type aclOp struct {
	name string
	// need holds the permission bits of which any one allows the op; 0
	// means the op checks no ACL.
	need int32
	run  func(t *testing.T, a aclActor, node string) jute.Code
	// done reports, through an all-powerful session, whether the op took
	// effect on node (nil for reads).
	done func(t *testing.T, admin *zk.Conn, node string) bool
}

// rawPathCode runs a raw request and returns its code.
func rawPathCode(t *testing.T, r *rawClient, op jute.OpCode, req jute.Record) jute.Code {
	t.Helper()
	h, _ := r.call(op, req)
	return h.Err
}

func aclMatrixOps() []aclOp {
	exists := func(t *testing.T, admin *zk.Conn, path string) bool {
		t.Helper()
		ok, _, err := admin.Exists(path)
		if err != nil {
			t.Fatalf("exists %s: %v", path, err)
		}
		return ok
	}
	return []aclOp{
		{"create", jute.PermCreate,
			func(t *testing.T, a aclActor, n string) jute.Code {
				_, err := a.zk.Create(n+"/new", nil, 0, zk.WorldACL(zk.PermAll))
				return zkCode(t, err)
			},
			func(t *testing.T, admin *zk.Conn, n string) bool { return exists(t, admin, n+"/new") }},
		{"delete", jute.PermDelete,
			func(t *testing.T, a aclActor, n string) jute.Code { return zkCode(t, a.zk.Delete(n+"/c", -1)) },
			func(t *testing.T, admin *zk.Conn, n string) bool { return !exists(t, admin, n+"/c") }},
		{"setData", jute.PermWrite,
			func(t *testing.T, a aclActor, n string) jute.Code {
				_, err := a.zk.Set(n, []byte("changed"), -1)
				return zkCode(t, err)
			},
			func(t *testing.T, admin *zk.Conn, n string) bool {
				data, _, err := admin.Get(n)
				if err != nil {
					t.Fatalf("get %s: %v", n, err)
				}
				return string(data) == "changed"
			}},
		{"setACL", jute.PermAdmin,
			func(t *testing.T, a aclActor, n string) jute.Code {
				_, err := a.zk.SetACL(n, []zk.ACL{digestEntry(zk.PermAll, "admin:pw")}, -1)
				return zkCode(t, err)
			},
			func(t *testing.T, admin *zk.Conn, n string) bool {
				_, st, err := admin.GetACL(n)
				if err != nil {
					t.Fatalf("getACL %s: %v", n, err)
				}
				return st.Aversion == 1
			}},
		{"getData", jute.PermRead, func(t *testing.T, a aclActor, n string) jute.Code {
			_, _, err := a.zk.Get(n)
			return zkCode(t, err)
		}, nil},
		{"getChildren", jute.PermRead, func(t *testing.T, a aclActor, n string) jute.Code {
			return rawPathCode(t, a.raw, jute.OpGetChildren, &jute.PathWatchRequest{Path: n})
		}, nil},
		{"getChildren2", jute.PermRead, func(t *testing.T, a aclActor, n string) jute.Code {
			_, _, err := a.zk.Children(n)
			return zkCode(t, err)
		}, nil},
		{"getAllChildrenNumber", jute.PermRead, func(t *testing.T, a aclActor, n string) jute.Code {
			return rawPathCode(t, a.raw, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: n})
		}, nil},
		{"check in multi", jute.PermRead, func(t *testing.T, a aclActor, n string) jute.Code {
			_, err := a.zk.Multi(&zk.CheckVersionRequest{Path: n, Version: 0})
			return zkCode(t, err)
		}, nil},
		{"getData in multiRead", jute.PermRead, func(t *testing.T, a aclActor, n string) jute.Code {
			return multiReadCode(t, a.raw, n)
		}, nil},
		{"getACL", jute.PermRead | jute.PermAdmin, func(t *testing.T, a aclActor, n string) jute.Code {
			_, _, err := a.zk.GetACL(n)
			return zkCode(t, err)
		}, nil},
		{"exists", 0, func(t *testing.T, a aclActor, n string) jute.Code {
			ok, _, err := a.zk.Exists(n)
			if err == nil && !ok {
				t.Errorf("exists %s = false", n)
			}
			return zkCode(t, err)
		}, nil},
		{"sync", 0, func(t *testing.T, a aclActor, n string) jute.Code {
			_, err := a.zk.Sync(n)
			return zkCode(t, err)
		}, nil},
		{"getEphemerals", 0, func(t *testing.T, a aclActor, n string) jute.Code {
			return rawPathCode(t, a.raw, jute.OpGetEphemerals, &jute.PathRequest{Path: n})
		}, nil},
	}
}

// multiReadCode runs a multiRead (opcode 22) of one getData and returns
// that op's result code; the multiRead itself must succeed.
func multiReadCode(t *testing.T, r *rawClient, path string) jute.Code {
	t.Helper()
	req := &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpGetData, Request: &jute.PathWatchRequest{Path: path}}}}
	h, body := r.call(jute.OpMultiRead, req)
	if h.Err != jute.OK {
		t.Fatalf("multiRead header err %v", h.Err)
	}
	var resp jute.MultiResponse
	if err := jute.Decode(body, &resp); err != nil || len(resp.Results) != 1 {
		t.Fatalf("multiRead response %+v, %v", resp, err)
	}
	if res := resp.Results[0]; res.Type == jute.OpError {
		return res.Err
	}
	return jute.OK
}

// TestACLPermissionMatrix runs every ACL-relevant operation against nodes
// that grant alice exactly one permission bit, or every bit but one.
func TestACLPermissionMatrix(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	addr := srv.Addr().String()
	admin := aclConnect(t, addr, "admin:pw")
	alice := aclActor{zk: aclConnect(t, addr, "alice:secret"), raw: aclSession(t, addr, "alice:secret")}
	mustCreate(t, admin, "/m", zk.WorldACL(zk.PermAll))
	bits := []int32{jute.PermRead, jute.PermWrite, jute.PermCreate, jute.PermDelete, jute.PermAdmin}
	for _, op := range aclMatrixOps() {
		for _, bit := range bits {
			for _, only := range []bool{true, false} {
				perms, mode := bit, "only"
				if !only {
					perms, mode = jute.PermAll&^bit, "allbut"
				}
				node := fmt.Sprintf("/m/%s-%s-%s", strings.ReplaceAll(op.name, " ", "_"), mode, acl.FormatPerms(bit))
				mustCreate(t, admin, node, []zk.ACL{digestEntry(perms, "alice:secret"), digestEntry(zk.PermAll, "admin:pw")})
				mustCreate(t, admin, node+"/c", zk.WorldACL(zk.PermAll))
				want := jute.OK
				if op.need != 0 && perms&op.need == 0 {
					want = jute.NoAuth
				}
				if got := op.run(t, alice, node); got != want {
					t.Errorf("%s with perms %q: %v, want %v", op.name, acl.FormatPerms(perms), got, want)
				}
				if op.done != nil && op.done(t, admin, node) != (want == jute.OK) {
					t.Errorf("%s with perms %q: took effect = %v, want %v", op.name, acl.FormatPerms(perms), !(want == jute.OK), want == jute.OK)
				}
			}
		}
	}
}

// TestACLErrorPrecedence checks which error wins when several apply, in
// ZooKeeper's order.
func TestACLErrorPrecedence(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	addr := srv.Addr().String()
	admin := aclConnect(t, addr, "admin:pw")
	c := aclConnect(t, addr, "alice:secret")
	grant := func(perms int32) []zk.ACL {
		return []zk.ACL{digestEntry(perms, "alice:secret"), digestEntry(zk.PermAll, "admin:pw")}
	}
	all := int32(zk.PermAll)
	mustCreate(t, admin, "/no-delete", grant(all&^zk.PermDelete))
	mustCreate(t, admin, "/delete", grant(zk.PermDelete))
	mustCreate(t, admin, "/no-write", grant(all&^zk.PermWrite))
	mustCreate(t, admin, "/write", grant(zk.PermWrite))
	mustCreate(t, admin, "/no-admin", grant(all&^zk.PermAdmin))
	mustCreate(t, admin, "/no-create", grant(all&^zk.PermCreate))
	mustCreate(t, admin, "/no-create/kid", zk.WorldACL(zk.PermAll))
	mustCreate(t, admin, "/no-read", grant(all&^zk.PermRead))
	valid := zk.WorldACL(zk.PermAll)
	invalid := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "no-colon"}}
	cases := []struct {
		name string
		run  func() error
		want jute.Code
	}{
		{"delete missing child, parent without DELETE", func() error { return c.Delete("/no-delete/x", -1) }, jute.NoAuth},
		{"delete missing child, parent with DELETE", func() error { return c.Delete("/delete/x", -1) }, jute.NoNode},
		{"delete under missing parent", func() error { return c.Delete("/missing/x", -1) }, jute.NoNode},
		{"setData bad version without WRITE", func() error { _, err := c.Set("/no-write", nil, 42); return err }, jute.NoAuth},
		{"setData bad version with WRITE", func() error { _, err := c.Set("/write", nil, 42); return err }, jute.BadVersion},
		{"setData missing node", func() error { _, err := c.Set("/missing", nil, 42); return err }, jute.NoNode},
		{"setACL invalid ACL on missing node", func() error { _, err := c.SetACL("/missing", invalid, -1); return err }, jute.InvalidACL},
		{"setACL valid ACL on missing node", func() error { _, err := c.SetACL("/missing", valid, -1); return err }, jute.NoNode},
		{"setACL invalid ACL without ADMIN", func() error { _, err := c.SetACL("/no-admin", invalid, -1); return err }, jute.InvalidACL},
		{"setACL bad aversion without ADMIN", func() error { _, err := c.SetACL("/no-admin", valid, 42); return err }, jute.NoAuth},
		{"create existing child, parent without CREATE", func() error { _, err := c.Create("/no-create/kid", nil, 0, valid); return err }, jute.NoAuth},
		{"create invalid ACL under missing parent", func() error { _, err := c.Create("/missing/x", nil, 0, invalid); return err }, jute.InvalidACL},
		{"create invalid ACL, parent without CREATE", func() error { _, err := c.Create("/no-create/x", nil, 0, invalid); return err }, jute.InvalidACL},
		{"create under missing parent", func() error { _, err := c.Create("/missing/x", nil, 0, valid); return err }, jute.NoNode},
		{"check bad version without READ", func() error {
			_, err := c.Multi(&zk.CheckVersionRequest{Path: "/no-read", Version: 42})
			return err
		}, jute.NoAuth},
		{"check missing node", func() error {
			_, err := c.Multi(&zk.CheckVersionRequest{Path: "/missing", Version: 0})
			return err
		}, jute.NoNode},
		{"getData missing node", func() error { _, _, err := c.Get("/missing"); return err }, jute.NoNode},
		{"getACL missing node", func() error { _, _, err := c.GetACL("/missing"); return err }, jute.NoNode},
	}
	for _, tc := range cases {
		if got := zkCode(t, tc.run()); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestACLDigest follows vectors/acl_digest.txt: a digest ACL grants its
// user, masks the hash for readers without ADMIN, and denies everyone else.
func TestACLDigest(t *testing.T) {
	const aliceID = "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=" // from the vector
	if got := acl.Digest("alice:secret"); got != aliceID {
		t.Fatalf("acl.Digest = %q, want %q", got, aliceID)
	}
	if got := zk.DigestACL(zk.PermAll, "alice", "secret")[0].ID; got != aliceID {
		t.Fatalf("go-zookeeper's digest id %q differs from %q", got, aliceID)
	}
	srv := startServer(t, aclConfig(t))
	addr := srv.Addr().String()
	alice := aclConnect(t, addr, "alice:secret")
	other := aclConnect(t, addr)
	wrong := aclConnect(t, addr, "alice:wrong")

	aliceAll := digestEntry(zk.PermAll, "alice:secret")
	worldRead := zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}
	mustCreate(t, alice, "/d", []zk.ACL{aliceAll, worldRead})

	got, st, err := alice.GetACL("/d")
	if err != nil || !reflect.DeepEqual(got, []zk.ACL{aliceAll, worldRead}) || st.Aversion != 0 {
		t.Fatalf("owner's getACL = %+v aversion %d, %v", got, st.Aversion, err)
	}
	got, _, err = other.GetACL("/d")
	masked := zk.ACL{Perms: zk.PermAll, Scheme: "digest", ID: "alice:x"}
	if err != nil || !reflect.DeepEqual(got, []zk.ACL{masked, worldRead}) {
		t.Fatalf("reader's getACL = %+v, %v; want the digest masked as alice:x", got, err)
	}
	if _, _, err := other.Get("/d"); err != nil {
		t.Fatalf("world READ: %v", err)
	}
	for name, c := range map[string]*zk.Conn{"no auth": other, "wrong password": wrong} {
		if _, err := c.Set("/d", []byte("x"), -1); zkCode(t, err) != jute.NoAuth {
			t.Errorf("%s: setData = %v, want NoAuth", name, err)
		}
	}
	if _, err := alice.Set("/d", []byte("x"), -1); err != nil {
		t.Fatalf("owner's setData: %v", err)
	}

	st, err = alice.SetACL("/d", []zk.ACL{aliceAll}, 0)
	if err != nil || st.Aversion != 1 {
		t.Fatalf("setACL = %+v, %v", st, err)
	}
	for name, c := range map[string]*zk.Conn{"no auth": other, "wrong password": wrong} {
		if _, _, err := c.Get("/d"); zkCode(t, err) != jute.NoAuth {
			t.Errorf("%s: getData = %v, want NoAuth", name, err)
		}
		if _, _, err := c.GetACL("/d"); zkCode(t, err) != jute.NoAuth {
			t.Errorf("%s: getACL = %v, want NoAuth", name, err)
		}
		if _, err := c.SetACL("/d", zk.WorldACL(zk.PermAll), -1); zkCode(t, err) != jute.NoAuth {
			t.Errorf("%s: setACL = %v, want NoAuth", name, err)
		}
	}
	if data, _, err := alice.Get("/d"); err != nil || string(data) != "x" {
		t.Fatalf("owner's getData = %q, %v", data, err)
	}

	// ADMIN without READ still reads the ACL, unmasked.
	mustCreate(t, alice, "/d-admin", []zk.ACL{aliceAll, {Perms: zk.PermAdmin, Scheme: "world", ID: "anyone"}})
	got, _, err = other.GetACL("/d-admin")
	if err != nil || len(got) != 2 || got[0] != aliceAll {
		t.Fatalf("getACL with world ADMIN = %+v, %v; want the digest unmasked", got, err)
	}

	// The id covers the whole "user:password", which may contain ':'.
	colon := aclConnect(t, addr, "bob:pa:ss")
	mustCreate(t, alice, "/d-colon", []zk.ACL{aliceAll, digestEntry(zk.PermRead, "bob:pa:ss")})
	if _, _, err := colon.Get("/d-colon"); err != nil {
		t.Fatalf("bob with a ':' in his password: %v", err)
	}
}

// aclIPCases are ACL ids and whether they grant the test client.
type aclIPCase struct {
	id   string
	want jute.Code
}

// checkIPACLs creates one node per case, readable only by its ip entry,
// and reads it from an unauthenticated session.
func checkIPACLs(t *testing.T, addr string, cases []aclIPCase) {
	t.Helper()
	admin := aclConnect(t, addr, "admin:pw")
	anon := aclConnect(t, addr)
	for i, tc := range cases {
		path := fmt.Sprintf("/ip%d", i)
		mustCreate(t, admin, path, []zk.ACL{{Perms: zk.PermRead, Scheme: "ip", ID: tc.id}, digestEntry(zk.PermAll, "admin:pw")})
		if _, _, err := anon.Get(path); zkCode(t, err) != tc.want {
			t.Errorf("ACL ip:%s: getData = %v, want %v", tc.id, err, tc.want)
		}
	}
}

func TestACLIPv4(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	checkIPACLs(t, srv.Addr().String(), []aclIPCase{
		{"127.0.0.1", jute.OK},
		{"127.0.0.0/8", jute.OK},
		{"127.0.0.1/32", jute.OK},
		{"0.0.0.0/0", jute.OK},
		{"10.0.0.0/8", jute.NoAuth},
		{"127.0.0.2", jute.NoAuth},
		{"0:0:0:0:0:0:0:1", jute.NoAuth}, // another address family
	})
}

func TestACLIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("cannot bind ::1 on this machine: %v", err)
	}
	ln.Close()
	cfg := aclConfig(t)
	cfg.ClientPortAddress = "::1"
	srv := startServer(t, cfg)
	addr := srv.Addr().String()
	checkIPACLs(t, addr, []aclIPCase{
		{"0:0:0:0:0:0:0:1", jute.OK},
		{"::1", jute.OK},
		{"::1/128", jute.OK},
		{"0:0:0:0:0:0:0:0/64", jute.OK},
		{"::/0", jute.OK},
		{"0:0:0:0:0:0:0:2", jute.NoAuth},
		{"fe80::/10", jute.NoAuth},
		{"127.0.0.1", jute.NoAuth}, // another address family
	})
	raw := aclSession(t, addr)
	want := []jute.ClientInfo{{AuthScheme: "ip", User: "0:0:0:0:0:0:0:1"}}
	if got := aclWhoAmI(t, raw); !reflect.DeepEqual(got, want) {
		t.Fatalf("whoAmI over IPv6 = %+v, want %+v", got, want)
	}
}

// TestACLAuthScheme checks the "auth" pseudo-scheme (CREATOR_ALL_ACL): it
// becomes the caller's authenticated ids, in the order ZooKeeper keeps them.
func TestACLAuthScheme(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	addr := srv.Addr().String()

	anon := aclConnect(t, addr)
	if _, err := anon.Create("/a0", nil, 0, zk.AuthACL(zk.PermAll)); zkCode(t, err) != jute.InvalidACL {
		t.Fatalf("auth ACL without authentication: %v, want InvalidACL", err)
	}
	if err := anon.AddAuth("ip", nil); err != nil {
		t.Fatalf("addauth ip: %v", err)
	}
	if _, err := anon.Create("/a0", nil, 0, zk.AuthACL(zk.PermAll)); zkCode(t, err) != jute.InvalidACL {
		t.Fatalf("auth ACL with only an ip id: %v, want InvalidACL", err)
	}

	alice := aclConnect(t, addr, "alice:secret")
	mustCreate(t, alice, "/a1", zk.AuthACL(zk.PermAll))
	got, _, err := alice.GetACL("/a1")
	if want := []zk.ACL{digestEntry(zk.PermAll, "alice:secret")}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("stored ACL = %+v, %v; want %+v", got, err, want)
	}
	if _, _, err := aclConnect(t, addr, "alice:secret").Get("/a1"); err != nil {
		t.Fatalf("another session of alice: %v", err)
	}
	if _, _, err := anon.Get("/a1"); zkCode(t, err) != jute.NoAuth {
		t.Fatalf("anonymous read: %v, want NoAuth", err)
	}

	// ZooKeeper keeps a connection's ids in a hash set: carol (bucket 4),
	// judy (12, after the ip id) and ivan (14), whatever the auth order.
	multi := aclConnect(t, addr, "ivan:pw", "carol:pw", "judy:pw")
	world := zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}
	mustCreate(t, multi, "/a2", []zk.ACL{world, {Perms: zk.PermRead | zk.PermAdmin, Scheme: "auth", ID: "ignored"}})
	got, _, err = multi.GetACL("/a2")
	rw := int32(zk.PermRead | zk.PermAdmin)
	want := []zk.ACL{world, digestEntry(rw, "carol:pw"), digestEntry(rw, "judy:pw"), digestEntry(rw, "ivan:pw")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("auth expansion = %+v, %v; want %+v", got, err, want)
	}
	st, err := multi.SetACL("/a2", zk.AuthACL(zk.PermAdmin), -1)
	if err != nil || st.Aversion != 1 {
		t.Fatalf("setACL auth: %+v, %v", st, err)
	}
	got, _, _ = multi.GetACL("/a2")
	if len(got) != 3 || got[0] != digestEntry(zk.PermAdmin, "carol:pw") {
		t.Fatalf("setACL auth expansion = %+v", got)
	}
}

// TestACLSuperDigest checks that the super user passes every check.
func TestACLSuperDigest(t *testing.T) {
	cfg := aclConfig(t)
	cfg.SuperDigest = acl.Digest("super:secret")
	srv := startServer(t, cfg)
	addr := srv.Addr().String()
	owner := aclConnect(t, addr, "alice:secret")
	nobody := []zk.ACL{digestEntry(zk.PermAll, "nobody:x")}
	mustCreate(t, owner, "/locked", nobody)
	mustCreate(t, owner, "/zero", []zk.ACL{{Perms: 0, Scheme: "world", ID: "anyone"}})

	denied := map[string]*zk.Conn{
		"no auth":        aclConnect(t, addr),
		"owner":          owner,
		"wrong password": aclConnect(t, addr, "super:wrong"),
	}
	super := aclConnect(t, addr, "super:secret")
	for _, node := range []string{"/locked", "/zero"} {
		for name, c := range denied {
			if _, _, err := c.Get(node); zkCode(t, err) != jute.NoAuth {
				t.Errorf("%s: getData %s = %v, want NoAuth", name, node, err)
			}
			if _, _, err := c.GetACL(node); zkCode(t, err) != jute.NoAuth {
				t.Errorf("%s: getACL %s = %v, want NoAuth", name, node, err)
			}
			if _, err := c.Create(node+"/kid", nil, 0, zk.WorldACL(zk.PermAll)); zkCode(t, err) != jute.NoAuth {
				t.Errorf("%s: create under %s = %v, want NoAuth", name, node, err)
			}
		}
		if _, err := super.Set(node, []byte("s"), -1); err != nil {
			t.Errorf("super setData %s: %v", node, err)
		}
		if data, _, err := super.Get(node); err != nil || string(data) != "s" {
			t.Errorf("super getData %s = %q, %v", node, data, err)
		}
		if _, err := super.Create(node+"/kid", nil, 0, nobody); err != nil {
			t.Errorf("super create under %s: %v", node, err)
		}
		if kids, _, err := super.Children(node); err != nil || len(kids) != 1 {
			t.Errorf("super children of %s = %v, %v", node, kids, err)
		}
		if err := super.Delete(node+"/kid", -1); err != nil {
			t.Errorf("super delete under %s: %v", node, err)
		}
	}
	got, _, err := super.GetACL("/locked")
	if err != nil || !reflect.DeepEqual(got, nobody) {
		t.Errorf("super getACL = %+v, %v; want it unmasked", got, err)
	}
	if st, err := super.SetACL("/locked", zk.WorldACL(zk.PermRead), 0); err != nil || st.Aversion != 1 {
		t.Errorf("super setACL = %+v, %v", st, err)
	}

	raw := aclSession(t, addr, "super:secret")
	want := []jute.ClientInfo{{AuthScheme: "super", User: ""}, {AuthScheme: "digest", User: "super"}, {AuthScheme: "ip", User: "127.0.0.1"}}
	if got := aclWhoAmI(t, raw); !reflect.DeepEqual(got, want) {
		t.Errorf("super whoAmI = %+v, want %+v", got, want)
	}
}

// TestACLFailedAuthClosesConnection follows vectors/auth_failed.txt: an
// auth packet no provider accepts gets AuthFailed with xid -4 and zxid 0,
// the server closes the connection, and the session lives on.
func TestACLFailedAuthClosesConnection(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	addr := srv.Addr().String()
	for _, scheme := range []string{"nosuchscheme", "super", "sasl", "x509", "world", "auth"} {
		t.Run(scheme, func(t *testing.T) {
			raw := aclSession(t, addr)
			h := aclAuth(t, raw, scheme, "user:pw")
			if want := (jute.ReplyHeader{Xid: jute.XidAuth, Zxid: 0, Err: jute.AuthFailed}); h != want {
				t.Fatalf("reply %+v, want %+v", h, want)
			}
			raw.expectClosed(5 * time.Second)

			again := dialRaw(t, addr)
			resp, err := again.handshake(jute.ConnectRequest{TimeOut: 20000, SessionID: raw.Resp.SessionID, Passwd: raw.Resp.Passwd})
			if err != nil || resp.SessionID != raw.Resp.SessionID || resp.TimeOut <= 0 {
				t.Fatalf("resume after AuthFailed = %+v, %v", resp, err)
			}
			if h, _ := again.call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}); h.Err != jute.OK {
				t.Fatalf("exists on the resumed session: %v", h.Err)
			}
		})
	}
	t.Run("go-zookeeper", func(t *testing.T) {
		c, events := testutil.Connect(t, addr, 15*time.Second)
		sid := c.SessionID()
		if err := c.AddAuth("nosuchscheme", []byte("x")); zkCode(t, err) != jute.AuthFailed {
			t.Fatalf("addauth nosuchscheme = %v, want AuthFailed", err)
		}
		testutil.WaitState(t, events, zk.StateHasSession, 10*time.Second)
		if c.SessionID() != sid {
			t.Fatalf("session changed from 0x%x to 0x%x", sid, c.SessionID())
		}
		if _, _, err := c.Exists("/"); err != nil {
			t.Fatalf("exists after reconnect: %v", err)
		}
	})
	t.Run("successful auth reply", func(t *testing.T) {
		raw := aclSession(t, addr)
		for _, scheme := range []string{"digest", "ip"} {
			if h := aclAuth(t, raw, scheme, "alice:secret"); h != (jute.ReplyHeader{Xid: jute.XidAuth}) {
				t.Fatalf("%s auth reply %+v, want xid -4 zxid 0 err 0", scheme, h)
			}
		}
	})
}

// TestACLIdentitiesBelongToConnection checks that a resumed session starts
// over with only its address: clients must replay their auth packets.
func TestACLIdentitiesBelongToConnection(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	addr := srv.Addr().String()
	mustCreate(t, aclConnect(t, addr, "alice:secret"), "/own", []zk.ACL{digestEntry(zk.PermAll, "alice:secret")})
	get := &jute.PathWatchRequest{Path: "/own"}

	first := aclSession(t, addr, "alice:secret")
	if h, _ := first.call(jute.OpGetData, get); h.Err != jute.OK {
		t.Fatalf("authenticated getData: %v", h.Err)
	}
	first.c.Close()
	again := dialRaw(t, addr)
	if _, err := again.handshake(jute.ConnectRequest{TimeOut: 20000, SessionID: first.Resp.SessionID, Passwd: first.Resp.Passwd}); err != nil {
		t.Fatal(err)
	}
	if h, _ := again.call(jute.OpGetData, get); h.Err != jute.NoAuth {
		t.Fatalf("getData on the resumed connection before auth: %v, want NoAuth", h.Err)
	}
	if h := aclAuth(t, again, "digest", "alice:secret"); h.Err != jute.OK {
		t.Fatalf("replayed auth: %v", h.Err)
	}
	if h, _ := again.call(jute.OpGetData, get); h.Err != jute.OK {
		t.Fatalf("getData after replayed auth: %v", h.Err)
	}
}

// zkcliWhoAmIBody is the whoAmI reply body of vectors/zkcli_misc.txt, after
// "addauth digest bob:pw" twice: the digest id, then the address.
const zkcliWhoAmIBody = "00000002" + "00000006646967657374" + "00000003626f62" + "000000026970" + "000000093132372e302e302e31"

func TestACLWhoAmI(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	addr := srv.Addr().String()
	ip := jute.ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}
	digest := func(user string) jute.ClientInfo { return jute.ClientInfo{AuthScheme: "digest", User: user} }
	cases := []struct {
		name  string
		creds []string
		want  []jute.ClientInfo
	}{
		{"no auth", nil, []jute.ClientInfo{ip}},
		{"zkCli vector", []string{"bob:pw", "bob:pw"}, []jute.ClientInfo{digest("bob"), ip}},
		{"hash-set order", []string{"ivan:pw", "carol:pw", "judy:pw", "carol:pw"}, []jute.ClientInfo{digest("carol"), ip, digest("judy"), digest("ivan")}},
		{"password with colons", []string{"bob:pa:ss"}, []jute.ClientInfo{digest("bob"), ip}},
	}
	for _, tc := range cases {
		raw := aclSession(t, addr, tc.creds...)
		if got := aclWhoAmI(t, raw); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: whoAmI = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	raw := aclSession(t, addr, "bob:pw", "bob:pw")
	h, body := raw.call(jute.OpWhoAmI, nil)
	if got := hex.EncodeToString(body); h.Err != jute.OK || got != zkcliWhoAmIBody {
		t.Fatalf("whoAmI body %s (%v), want the vector's %s", got, h.Err, zkcliWhoAmIBody)
	}
}

// TestACLSetACLVersionAndValidation checks aversion handling and which ACL
// lists create and setACL reject.
func TestACLSetACLVersionAndValidation(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	addr := srv.Addr().String()
	c := aclConnect(t, addr, "alice:secret")
	worldAll := zk.WorldACL(zk.PermAll)
	mustCreate(t, c, "/sv", worldAll)

	for i, version := range []int32{0, 1, -1} {
		st, err := c.SetACL("/sv", worldAll, version)
		if err != nil || st.Aversion != int32(i+1) || st.Version != 0 {
			t.Fatalf("setACL with aversion %d = %+v, %v", version, st, err)
		}
	}
	if _, err := c.SetACL("/sv", worldAll, 0); zkCode(t, err) != jute.BadVersion {
		t.Fatalf("stale aversion: %v, want BadVersion", err)
	}
	if _, st, _ := c.GetACL("/sv"); st.Aversion != 3 {
		t.Fatalf("aversion after a failed setACL = %d, want 3", st.Aversion)
	}
	worldRead := zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}
	if _, err := c.SetACL("/sv", []zk.ACL{worldRead, worldRead, worldAll[0], worldRead}, -1); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := c.GetACL("/sv"); !reflect.DeepEqual(got, []zk.ACL{worldRead, worldAll[0]}) {
		t.Fatalf("duplicates not removed in order: %+v", got)
	}

	entry := func(scheme, id string) []zk.ACL { return []zk.ACL{{Perms: zk.PermAll, Scheme: scheme, ID: id}} }
	invalid := []struct {
		name string
		acl  []zk.ACL
	}{
		{"empty list", []zk.ACL{}},
		{"unknown scheme", entry("foo", "bar")},
		{"digest without hash", entry("digest", "alice")},
		{"digest with empty hash", entry("digest", "alice:")},
		{"digest with three parts", entry("digest", "a:b:c")},
		{"world other than anyone", entry("world", "nobody")},
		{"ip prefix too long", entry("ip", "10.0.0.0/33")},
		{"ip with three parts", entry("ip", "10.0.0")},
		{"ip part above 255", entry("ip", "1.2.3.256")},
		{"ipv6 prefix too long", entry("ip", "fe80::/129")},
		{"super", entry("super", "")},
		{"x509 when not enabled", entry("x509", "CN=client")},
		{"sasl", entry("sasl", "alice")},
		{"valid then invalid", append(zk.WorldACL(zk.PermAll), entry("foo", "bar")...)},
	}
	for i, tc := range invalid {
		path := fmt.Sprintf("/inv%d", i)
		if _, err := c.Create(path, nil, 0, tc.acl); zkCode(t, err) != jute.InvalidACL {
			t.Errorf("create with %s: %v, want InvalidACL", tc.name, err)
		}
		if ok, _, _ := c.Exists(path); ok {
			t.Errorf("create with %s made %s", tc.name, path)
		}
		if _, err := c.SetACL("/sv", tc.acl, -1); zkCode(t, err) != jute.InvalidACL {
			t.Errorf("setACL with %s: %v, want InvalidACL", tc.name, err)
		}
	}
	if _, st, _ := c.GetACL("/sv"); st.Aversion != 4 {
		t.Fatalf("aversion after rejected setACLs = %d, want 4", st.Aversion)
	}

	valid := []struct {
		name string
		acl  []zk.ACL
	}{
		{"digest with empty user", entry("digest", ":hash")},
		{"digest with trailing colon", entry("digest", "a:b:")},
		{"perms 0", []zk.ACL{{Perms: 0, Scheme: "world", ID: "anyone"}}},
		{"ip CIDR", entry("ip", "10.0.0.0/8")},
		{"ipv6 CIDR", entry("ip", "2001:db8::/32")},
	}
	for i, tc := range valid {
		path := fmt.Sprintf("/ok%d", i)
		if _, err := c.Create(path, nil, 0, tc.acl); err != nil {
			t.Errorf("create with %s: %v", tc.name, err)
		}
	}
}

// writeUsersFile writes a users file with alice's password and returns its path.
func writeUsersFile(t *testing.T, password string) string {
	t.Helper()
	hash, err := acl.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(path, []byte("# test users\n\nalice:"+hash+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkUsersFileAuth exercises the usersfile scheme on a server that has it.
func checkUsersFileAuth(t *testing.T, addr, password string) {
	t.Helper()
	c, _ := testutil.Connect(t, addr, 20*time.Second)
	if err := c.AddAuth("usersfile", []byte("alice:"+password)); err != nil {
		t.Fatalf("addauth usersfile: %v", err)
	}
	aliceACL := []zk.ACL{{Perms: zk.PermAll, Scheme: "usersfile", ID: "alice"}}
	mustCreate(t, c, "/u", aliceACL)
	if _, err := c.Set("/u", []byte("x"), -1); err != nil {
		t.Fatalf("usersfile:alice setData: %v", err)
	}
	mustCreate(t, c, "/u-auth", zk.AuthACL(zk.PermAll))
	if got, _, err := c.GetACL("/u-auth"); err != nil || !reflect.DeepEqual(got, aliceACL) {
		t.Fatalf("auth ACL as usersfile:alice = %+v, %v", got, err)
	}
	if _, _, err := aclConnect(t, addr, "alice:"+password).Get("/u"); zkCode(t, err) != jute.NoAuth {
		t.Fatalf("digest alice reading a usersfile ACL: %v, want NoAuth", err)
	}

	raw := aclSession(t, addr)
	if h := aclAuth(t, raw, "usersfile", "alice:"+password); h.Err != jute.OK {
		t.Fatalf("raw addauth usersfile: %v", h.Err)
	}
	want := []jute.ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}, {AuthScheme: "usersfile", User: "alice"}}
	if got := aclWhoAmI(t, raw); !reflect.DeepEqual(got, want) {
		t.Fatalf("whoAmI = %+v, want %+v", got, want)
	}

	bad := aclSession(t, addr)
	if h := aclAuth(t, bad, "usersfile", "alice:wrong"); h != (jute.ReplyHeader{Xid: jute.XidAuth, Err: jute.AuthFailed}) {
		t.Fatalf("wrong password: reply %+v, want AuthFailed", h)
	}
	bad.expectClosed(5 * time.Second)
}

func TestACLUsersFileProvider(t *testing.T) {
	t.Parallel() // password hashing is slow, under -race especially
	const password = "s3:cret"
	cfg := aclConfig(t)
	cfg.AuthProviders = map[int]string{1: "usersfile"}
	cfg.Extra = map[string]string{"usersfile.path": writeUsersFile(t, password)}
	srv := startServer(t, cfg)
	checkUsersFileAuth(t, srv.Addr().String(), password)
}

// TestACLUsersFileFromZooCfg enables the usersfile scheme the way an
// operator does, through zoo.cfg.
func TestACLUsersFileFromZooCfg(t *testing.T) {
	t.Parallel()
	const password = "pw"
	usersPath := writeUsersFile(t, password)
	text := fmt.Sprintf("tickTime=1000\ndataDir=%s\nclientPort=0\nclientPortAddress=127.0.0.1\nforceSync=no\nadmin.enableServer=false\n"+
		"authProvider.1=usersfile\nusersfile.path=%s\nzookeeper.DigestAuthenticationProvider.superDigest=%s\n",
		filepath.Join(t.TempDir(), "data"), usersPath, acl.Digest("super:secret"))
	cfg, warnings, err := conf.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	t.Logf("parse warnings: %q", warnings)
	if cfg.AuthProviders[1] != "usersfile" {
		t.Fatalf("AuthProviders = %v", cfg.AuthProviders)
	}
	srv := startServer(t, cfg)
	checkUsersFileAuth(t, srv.Addr().String(), password)
	if _, _, err := aclConnect(t, srv.Addr().String(), "super:secret").Get("/u"); err != nil {
		t.Fatalf("super digest from zoo.cfg: %v", err)
	}
}

// TestACLBadProviderConfig checks that a misconfigured provider stops the
// server from starting instead of leaving a scheme silently missing.
func TestACLBadProviderConfig(t *testing.T) {
	cases := []struct {
		name    string
		extra   map[string]string
		provide string
		want    error
	}{
		{"usersfile without path", nil, "usersfile", acl.ErrBadParams},
		{"usersfile missing file", map[string]string{"usersfile.path": filepath.Join(t.TempDir(), "absent")}, "usersfile", acl.ErrBadUsersFile},
		{"unknown provider", nil, "com.example.NoSuchProvider", acl.ErrUnknownProvider},
		{"sasl provider", nil, "org.apache.zookeeper.server.auth.SASLAuthenticationProvider", nil},
	}
	for _, tc := range cases {
		cfg := aclConfig(t)
		cfg.AuthProviders = map[int]string{1: tc.provide}
		if tc.extra != nil {
			cfg.Extra = tc.extra
		}
		srv, err := server.New(server.Options{Config: cfg})
		if err == nil {
			srv.Close()
		}
		if (tc.want == nil && err != nil) || !errors.Is(err, tc.want) {
			t.Errorf("%s: server.New error %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestACLX509FromConfig checks that x509 ACLs are InvalidACL until the x509
// provider is configured, and that an x509 auth packet on a plaintext
// connection fails.
func TestACLX509FromConfig(t *testing.T) {
	x509ACL := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: "CN=client1,O=Example"}}
	for _, enabled := range []bool{false, true} {
		cfg := aclConfig(t)
		want := jute.InvalidACL
		if enabled {
			cfg.AuthProviders = map[int]string{1: "org.apache.zookeeper.server.auth.X509AuthenticationProvider"}
			want = jute.OK
		}
		srv := startServer(t, cfg)
		c := aclConnect(t, srv.Addr().String())
		if _, err := c.Create("/x", nil, 0, x509ACL); zkCode(t, err) != want {
			t.Errorf("x509 enabled %v: create with an x509 ACL = %v, want %v", enabled, err, want)
		}
		raw := aclSession(t, srv.Addr().String())
		if h := aclAuth(t, raw, "x509", ""); h.Err != jute.AuthFailed {
			t.Errorf("x509 enabled %v: x509 auth without TLS = %v, want AuthFailed", enabled, h.Err)
		}
	}
}

// TestACLMultiRollsBackOnNoAuth checks that a multi with one op lacking
// permission fails as a whole.
func TestACLMultiRollsBackOnNoAuth(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	addr := srv.Addr().String()
	admin := aclConnect(t, addr, "admin:pw")
	mustCreate(t, admin, "/ro", []zk.ACL{digestEntry(zk.PermAll, "admin:pw"), {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}})
	c := aclConnect(t, addr)
	res, err := c.Multi(
		&zk.CreateRequest{Path: "/made", Data: nil, Acl: zk.WorldACL(zk.PermAll)},
		&zk.SetDataRequest{Path: "/ro", Data: []byte("x"), Version: -1},
	)
	if err == nil || len(res) != 2 || !errors.Is(res[1].Error, zk.ErrNoAuth) {
		t.Fatalf("multi = %+v, %v; want the setData to fail with NoAuth", res, err)
	}
	if ok, _, _ := c.Exists("/made"); ok {
		t.Fatal("the create of a failed multi was applied")
	}
}

// TestACLPipelinedReadUsesIDsAtReceipt: ZooKeeper snapshots a connection's
// ids when a request arrives (ZooKeeperServer.processPacket passes
// cnxn.getAuthInfo() to the Request, and reads check request.authInfo), so a
// read pipelined before an auth packet is judged without the new identity.
func TestACLPipelinedReadUsesIDsAtReceipt(t *testing.T) {
	srv := startServer(t, aclConfig(t))
	addr := srv.Addr().String()
	mustCreate(t, aclConnect(t, addr, "alice:secret"), "/own", []zk.ACL{digestEntry(zk.PermAll, "alice:secret")})
	r := aclSession(t, addr)
	frame := jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpGetData}, &jute.PathWatchRequest{Path: "/own"})
	frame = jute.AppendFrame(frame, &jute.RequestHeader{Xid: jute.XidAuth, Type: jute.OpAuth},
		&jute.AuthPacket{Scheme: "digest", Auth: []byte("alice:secret")})
	frame = jute.AppendFrame(frame, &jute.RequestHeader{Xid: 2, Type: jute.OpGetData}, &jute.PathWatchRequest{Path: "/own"})
	if _, err := r.c.Write(frame); err != nil {
		t.Fatal(err)
	}
	want := map[int32]jute.Code{1: jute.NoAuth, jute.XidAuth: jute.OK, 2: jute.OK}
	for range want {
		b, err := r.readFrame(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var h jute.ReplyHeader
		h.Decode(jute.NewDecoder(b))
		if w, ok := want[h.Xid]; !ok || h.Err != w {
			t.Errorf("reply to xid %d: %v, want %v", h.Xid, h.Err, w)
		}
	}
}
