package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/internal/zkproc"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/test/ports"
)

// servingMirror is a ZooKeeper ensemble of 3 voters and a mirror (sid 4)
// serving clients, for the tests of `zkserverd mirror --client-addr`.
type servingMirror struct {
	e      *zkproc.Ensemble
	m      *mirrorServer
	addr   string // the mirror's client address
	voters []string
}

// startServingMirror launches the ensemble (TTL nodes on) and the mirror,
// and waits until the mirror serves.
func startServingMirror(t *testing.T) *servingMirror {
	t.Helper()
	zkproc.Require(t)
	picker := ports.ForCmd()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := zkproc.Launch(ctx, zkproc.Spec{Dir: t.TempDir(), Voters: []int64{1, 2, 3}, Outside: []int64{4},
		Ports: zkprocPorts{picker}, ExtraConfig: []string{"extendedTypesEnabled=true"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cfg := "tickTime=500\n"
	for id, line := range e.ServerLines() {
		cfg += fmt.Sprintf("server.%d=%s\n", id, line)
	}
	cfgPath := filepath.Join(t.TempDir(), "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(picker.Free(t))
	view, err := readEnsembleView(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := startMirrorServer(ctx, mirrorFlags{ensemble: cfgPath, myid: 4, clientAddr: addr}, view, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.srv.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	return &servingMirror{e: e, m: m, addr: addr, voters: e.ClientAddrs()}
}

// testWriter sends logs to t.Log (shown on failure).
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// client connects to addr only and waits for its session.
func client(t *testing.T, addr string) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(testutil.QuietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c, events
			}
		case <-deadline:
			t.Fatalf("no session on %s within 20 s", addr)
		}
	}
}

// TestMirrorServesClients runs clients on a mirror of a ZooKeeper 3.8
// ensemble and checks every answer against a client on a ZooKeeper voter.
func TestMirrorServesClients(t *testing.T) {
	sm := startServingMirror(t)
	if mode := testutil.FourLetterLine(sm.addr, "srvr", "Mode: "); mode != "observer" {
		t.Errorf("srvr Mode %q, want observer", mode)
	}
	mc, _ := client(t, sm.addr)
	vc, _ := client(t, sm.voters[0])
	if got := mc.SessionID() >> 56; got != 4 {
		t.Errorf("session %#x created on the mirror: top byte %d, want its myid 4", mc.SessionID(), got)
	}
	t.Run("operations", func(t *testing.T) { checkOperations(t, mc, vc) })
	t.Run("watches", func(t *testing.T) { checkWatches(t, mc, vc) })
	t.Run("pipelined order", func(t *testing.T) { checkPipelinedOrder(t, sm, mc) })
	t.Run("sessions", func(t *testing.T) { checkSessionMoves(t, sm) })
	t.Run("idle session lives", func(t *testing.T) { checkTouches(t, sm, vc) })
	t.Run("abandoned session expires", func(t *testing.T) { checkAbandoned(t, sm, mc) })
	t.Run("freeze", func(t *testing.T) { checkFreeze(t, sm, mc, vc) })
	t.Run("leader killed", func(t *testing.T) { checkLeaderKilled(t, sm) })
}

// same reads path on both clients (the voter synced first) and fails
// unless data and stat agree.
func same(t *testing.T, mc, vc *zk.Conn, path string) *zk.Stat {
	t.Helper()
	if _, err := vc.Sync(path); err != nil {
		t.Fatalf("sync %s on the voter: %v", path, err)
	}
	md, ms, merr := mc.Get(path)
	vd, vs, verr := vc.Get(path)
	if !errors.Is(merr, verr) && merr != verr {
		t.Fatalf("get %s: mirror %v, voter %v", path, merr, verr)
	}
	if string(md) != string(vd) || !reflect.DeepEqual(ms, vs) {
		t.Fatalf("get %s: mirror %q %+v, voter %q %+v", path, md, ms, vd, vs)
	}
	return ms
}

func checkOperations(t *testing.T, mc, vc *zk.Conn) {
	open := zk.WorldACL(zk.PermAll)
	for _, tc := range []struct {
		path  string
		flags int32
	}{{"/p", 0}, {"/p/eph", zk.FlagEphemeral}, {"/p/seq-", zk.FlagSequence}, {"/p/eseq-", zk.FlagEphemeral | zk.FlagSequence}} {
		got, err := mc.Create(tc.path, []byte(tc.path), tc.flags, open)
		if err != nil {
			t.Fatalf("create %s on the mirror: %v", tc.path, err)
		}
		if tc.flags&zk.FlagSequence != 0 && got != tc.path+"0000000001" && got != tc.path+"0000000002" {
			t.Errorf("sequential create %s: %s", tc.path, got)
		}
		st := same(t, mc, vc, got)
		if tc.flags&zk.FlagEphemeral != 0 && st.EphemeralOwner != mc.SessionID() {
			t.Errorf("%s: ephemeralOwner %#x, want %#x", got, st.EphemeralOwner, mc.SessionID())
		}
	}
	if _, err := mc.CreateContainer("/c", nil, zk.FlagContainer, open); err != nil {
		t.Fatalf("create container: %v", err)
	}
	same(t, mc, vc, "/c")
	if _, err := mc.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, open, time.Hour); err != nil {
		t.Fatalf("create TTL: %v", err)
	}
	same(t, mc, vc, "/ttl")
	if _, err := mc.Create("/p", nil, 0, open); !errors.Is(err, zk.ErrNodeExists) {
		t.Errorf("create of an existing node: %v, want node exists", err)
	}
	mk, _, err := mc.Children("/p")
	vc.Sync("/p") // a voter may not have applied the mirror's writes yet
	vk, _, _ := vc.Children("/p")
	if err != nil || len(mk) != 3 || !reflect.DeepEqual(mk, vk) {
		t.Errorf("children of /p: mirror %v %v, voter %v", mk, err, vk)
	}
	ms, err := mc.Set("/p", []byte("v1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if vs := same(t, mc, vc, "/p"); !reflect.DeepEqual(ms, vs) {
		t.Errorf("setData's stat %+v, the voter's %+v", ms, vs)
	}
	if _, err := mc.Set("/p", []byte("v2"), 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("setData with an old version: %v, want bad version", err)
	}
	if err := mc.Delete("/ttl", 5); !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("delete with a bad version: %v", err)
	}
	if err := mc.Delete("/ttl", -1); err != nil {
		t.Fatal(err)
	}
	vc.Sync("/ttl")
	if ok, _, err := vc.Exists("/ttl"); err != nil || ok {
		t.Errorf("deleted /ttl on the voter: %v %v", ok, err)
	}
	checkMulti(t, mc, vc)
	checkACL(t, mc, vc)
	if _, err := mc.Sync("/p"); err != nil {
		t.Errorf("sync on the mirror: %v", err)
	}
	// reconfig goes to the leader, whose reconfigEnabled=false refuses it.
	_, merr := mc.IncrementalReconfig(nil, []string{"3"}, -1)
	_, verr := vc.IncrementalReconfig(nil, []string{"3"}, -1)
	if merr == nil || errText(merr) != errText(verr) {
		t.Errorf("reconfig: mirror %v, voter %v", merr, verr)
	}
}

func checkMulti(t *testing.T, mc, vc *zk.Conn) {
	open := zk.WorldACL(zk.PermAll)
	if _, err := mc.Multi(&zk.CreateRequest{Path: "/m1", Data: []byte("a"), Acl: open},
		&zk.SetDataRequest{Path: "/m1", Data: []byte("b"), Version: 0},
		&zk.CheckVersionRequest{Path: "/p", Version: 1}); err != nil {
		t.Fatalf("multi on the mirror: %v", err)
	}
	same(t, mc, vc, "/m1")
	failing := func() []any {
		return []any{&zk.CreateRequest{Path: "/m2", Acl: open}, &zk.DeleteRequest{Path: "/absent", Version: -1},
			&zk.SetDataRequest{Path: "/m1", Version: -1}}
	}
	mr, merr := mc.Multi(failing()...)
	vr, verr := vc.Multi(failing()...)
	if merr == nil || errText(merr) != errText(verr) {
		t.Errorf("failed multi: mirror %v, voter %v", merr, verr)
	}
	if len(mr) != len(vr) {
		t.Fatalf("failed multi: mirror %+v, voter %+v", mr, vr)
	}
	for i := range mr {
		if errText(mr[i].Error) != errText(vr[i].Error) {
			t.Errorf("failed multi element %d: mirror %v, voter %v", i, mr[i].Error, vr[i].Error)
		}
	}
	if ok, _, _ := vc.Exists("/m2"); ok {
		t.Error("a failed multi created /m2")
	}
}

// errText is err's text ("" for nil): go-zookeeper makes a new error
// value for codes it has no variable for.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func checkACL(t *testing.T, mc, vc *zk.Conn) {
	if _, err := mc.Create("/secret", []byte("s"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.SetACL("/secret", zk.DigestACL(zk.PermAll, "user", "pw"), 0); err != nil {
		t.Fatalf("setACL on the mirror: %v", err)
	}
	same(t, mc, vc, "/secret")
	if _, _, err := mc.Get("/secret"); err != nil && !errors.Is(err, zk.ErrNoAuth) {
		t.Fatal(err)
	}
	if _, err := mc.Set("/secret", []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("write without the digest: %v, want no auth", err)
	}
	if _, _, err := vc.Get("/secret"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("read on the voter without the digest: %v, want no auth", err)
	}
	if _, _, err := mc.Get("/secret"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("read on the mirror without the digest: %v, want no auth", err)
	}
	if err := mc.AddAuth("digest", []byte("user:pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Set("/secret", []byte("x"), -1); err != nil {
		t.Errorf("write with the digest: %v", err)
	}
}

// checkWatches: writes through a voter fire the mirror's watches, and
// the mirror's writes are seen on the voter.
func checkWatches(t *testing.T, mc, vc *zk.Conn) {
	if _, err := vc.Create("/w", []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Sync("/w"); err != nil {
		t.Fatal(err)
	}
	_, _, data, err := mc.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, kids, err := mc.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	st, err := vc.Set("/w", []byte("1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vc.Create("/w/k", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan zk.Event{"data": data, "child": kids} {
		select {
		case ev := <-ch:
			want := map[string]zk.EventType{"data": zk.EventNodeDataChanged, "child": zk.EventNodeChildrenChanged}[name]
			if ev.Type != want || ev.Path != "/w" {
				t.Errorf("%s watch: %+v", name, ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s watch on the mirror did not fire for a voter's write", name)
		}
	}
	_, ms, err := mc.Get("/w")
	if err != nil || ms.Mzxid != st.Mzxid {
		t.Errorf("mirror's /w after the event: %+v %v, voter's mzxid %#x", ms, err, st.Mzxid)
	}
	_, _, vw, err := vc.GetW("/w/k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Set("/w/k", []byte("m"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-vw:
		if ev.Type != zk.EventNodeDataChanged {
			t.Errorf("voter's watch: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("voter's watch did not fire for the mirror's write")
	}
}

// rawConnect resumes session sid with its password on addr (sid 0: a
// new session): the ConnectResponse and the connection.
func rawConnect(t *testing.T, addr string, sid int64) (jute.ConnectResponse, net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	passwd := make([]byte, 16)
	if sid != 0 {
		passwd = session.Password(sid)
	}
	req := jute.ConnectRequest{TimeOut: 10000, SessionID: sid, Passwd: passwd}
	if _, err := nc.Write(jute.AppendFrame(nil, &req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	var resp jute.ConnectResponse
	frame, err := jute.ReadFrame(br, 1<<20, nil)
	if err != nil {
		t.Fatalf("connect to %s with session %#x: %v", addr, sid, err)
	}
	d := jute.NewDecoder(frame)
	resp.Decode(d)
	return resp, nc, br
}

// rawCreate creates an ephemeral path over a raw session connection and
// returns the reply's error code.
func rawCreate(t *testing.T, nc net.Conn, br *bufio.Reader, path string) jute.Code {
	t.Helper()
	h := jute.RequestHeader{Xid: 1, Type: jute.OpCreate}
	req := jute.CreateRequest{Path: path, ACL: []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "world", ID: "anyone"}}}, Flags: 1}
	if _, err := nc.Write(jute.AppendFrame(nil, &h, &req)); err != nil {
		t.Fatal(err)
	}
	frame, err := jute.ReadFrame(br, 1<<20, nil)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	var rh jute.ReplyHeader
	rh.Decode(jute.NewDecoder(frame))
	return rh.Err
}

// checkPipelinedOrder sends reads and writes of one node back to back
// without waiting for replies, as a client with several threads does: a
// read sees every write the session sent before it and none it sent
// after (the write may reach ZooKeeper's leader before the read runs: the
// read then runs right before the write is applied), and the replies'
// zxids never go back.
func checkPipelinedOrder(t *testing.T, sm *servingMirror, mc *zk.Conn) {
	const path, rounds = "/pipelined", 200
	if _, err := mc.Create(path, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, nc, br := rawConnect(t, sm.addr, 0)
	var burst []byte
	for i := range rounds {
		burst = jute.AppendFrame(burst, &jute.RequestHeader{Xid: int32(2*i + 1), Type: jute.OpGetData},
			&jute.PathWatchRequest{Path: path})
		burst = jute.AppendFrame(burst, &jute.RequestHeader{Xid: int32(2*i + 2), Type: jute.OpSetData},
			&jute.SetDataRequest{Path: path, Data: []byte(strconv.Itoa(i + 1)), Version: -1})
	}
	if _, err := nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	var last int64
	for i := range 2 * rounds {
		frame, err := jute.ReadFrame(br, 1<<20, nil)
		if err != nil {
			t.Fatalf("reply %d: %v", i+1, err)
		}
		d := jute.NewDecoder(frame)
		var h jute.ReplyHeader
		h.Decode(d)
		if h.Xid != int32(i+1) || h.Err != jute.OK {
			t.Fatalf("reply %d: xid %d, %v", i+1, h.Xid, h.Err)
		}
		if h.Zxid < last {
			t.Fatalf("reply %d: zxid %#x after %#x", i+1, h.Zxid, last)
		}
		last = h.Zxid
		if i%2 == 0 {
			var r jute.GetDataResponse
			r.Decode(d)
			if want := strconv.Itoa(i / 2); string(r.Data) != want {
				t.Fatalf("read %d of the burst returned %q, want %q: the writes sent before it and none after", i/2+1, r.Data, want)
			}
		}
	}
}

// checkSessionMoves moves sessions between the mirror and a voter, and
// closes one on the mirror.
func checkSessionMoves(t *testing.T, sm *servingMirror) {
	resp, nc, br := rawConnect(t, sm.addr, 0)
	sid := resp.SessionID
	if sid>>56 != 4 || string(resp.Passwd) != string(session.Password(sid)) {
		t.Fatalf("new session on the mirror: %+v", resp)
	}
	if code := rawCreate(t, nc, br, "/moving"); code != jute.OK {
		t.Fatalf("create on the mirror: %v", code)
	}
	nc.Close()
	resp, nc, br = rawConnect(t, sm.voters[1], sid)
	if resp.SessionID != sid || resp.TimeOut <= 0 {
		t.Fatalf("mirror's session %#x on a voter: %+v", sid, resp)
	}
	if code := rawCreate(t, nc, br, "/moved-to-voter"); code != jute.OK {
		t.Errorf("create on the voter with the mirror's session: %v", code)
	}
	nc.Close()
	resp, nc, br = rawConnect(t, sm.addr, sid)
	if resp.SessionID != sid || resp.TimeOut <= 0 {
		t.Fatalf("session %#x back on the mirror: %+v", sid, resp)
	}
	if code := rawCreate(t, nc, br, "/moved-back"); code != jute.OK {
		t.Errorf("create on the mirror after the move back: %v", code)
	}

	resp, nc, _ = rawConnect(t, sm.voters[2], 0)
	vsid := resp.SessionID
	nc.Close()
	resp, nc, br = rawConnect(t, sm.addr, vsid)
	if resp.SessionID != vsid || resp.TimeOut <= 0 {
		t.Fatalf("voter's session %#x on the mirror: %+v (expired?)", vsid, resp)
	}
	if code := rawCreate(t, nc, br, "/from-voter"); code != jute.OK {
		t.Errorf("create on the mirror with the voter's session: %v", code)
	}
	check, _ := client(t, sm.voters[0])
	check.Sync("/")
	for path, owner := range map[string]int64{"/moving": sid, "/moved-to-voter": sid, "/moved-back": sid, "/from-voter": vsid} {
		_, st, err := check.Get(path)
		if err != nil || st.EphemeralOwner != owner {
			t.Errorf("%s on a voter: %+v %v, want owner %#x", path, st, err, owner)
		}
	}
	if resp, _, _ := rawConnect(t, sm.addr, 0x0400000000abcdef); resp.SessionID != 0 {
		t.Errorf("unknown session resumed on the mirror: %+v", resp)
	}

	closing, _ := client(t, sm.addr)
	if _, err := closing.Create("/closing", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	closing.Close()
	check.Sync("/")
	if ok, _, err := check.Exists("/closing"); err != nil || ok {
		t.Errorf("ephemeral of a session closed on the mirror still on ZooKeeper: %v %v", ok, err)
	}
}

// checkTouches: a session with a 2 s timeout, idle but pinging on the
// mirror, outlives several timeouts: the mirror reports it to the leader.
func checkTouches(t *testing.T, sm *servingMirror, vc *zk.Conn) {
	c, events, err := zk.Connect([]string{sm.addr}, 2*time.Second, zk.WithLogger(testutil.QuietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/idle", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(6 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-events:
			if ev.State == zk.StateExpired || ev.State == zk.StateDisconnected {
				t.Fatalf("idle session on the mirror: %v", ev.State)
			}
		case <-deadline:
			done = true
		}
	}
	vc.Sync("/idle")
	if _, st, err := vc.Get("/idle"); err != nil || st.EphemeralOwner != c.SessionID() {
		t.Errorf("the idle session's ephemeral on ZooKeeper: %+v %v", st, err)
	}
}

// checkAbandoned: a session whose client vanished from the mirror is
// expired by ZooKeeper's leader (the mirror stops reporting it), and the
// mirror's watch on its ephemeral fires.
func checkAbandoned(t *testing.T, sm *servingMirror, mc *zk.Conn) {
	nc, err := net.DialTimeout("tcp", sm.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(jute.AppendFrame(nil, &jute.ConnectRequest{TimeOut: 1000, Passwd: make([]byte, 16)})); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	frame, err := jute.ReadFrame(br, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	var resp jute.ConnectResponse
	resp.Decode(jute.NewDecoder(frame))
	if code := rawCreate(t, nc, br, "/abandoned"); code != jute.OK {
		t.Fatalf("create: %v", code)
	}
	ok, _, gone, err := mc.ExistsW("/abandoned")
	if err != nil || !ok {
		t.Fatalf("exists /abandoned on the mirror: %v %v", ok, err)
	}
	nc.Close() // no closeSession: the session is left to expire
	select {
	case ev := <-gone:
		if ev.Type != zk.EventNodeDeleted {
			t.Errorf("watch on the abandoned ephemeral: %+v", ev)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("session %#x (timeout %d ms) not expired by ZooKeeper within 15 s", resp.SessionID, resp.TimeOut)
	}
}

// checkFreeze: a write submitted while the mirror is frozen completes
// only after Unfreeze.
func checkFreeze(t *testing.T, sm *servingMirror, mc, vc *zk.Conn) {
	// Sessions are created through the leader too: a client connecting
	// while frozen waits. This one reads while the mirror is frozen.
	other, _ := client(t, sm.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	last, err := sm.m.Freeze(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sm.m.Unfreeze() // a second Unfreeze does nothing
	if got := sm.m.replica.State().LastZxid(); got != last {
		t.Errorf("Freeze returned %#x, the state is at %#x", last, got)
	}
	done := make(chan error, 1)
	go func() {
		_, err := mc.Create("/frozen", nil, 0, zk.WorldACL(zk.PermAll))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a write completed while frozen: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	// A read on another connection is answered (on the same one it would
	// wait for the write before it, as on ZooKeeper).
	if _, _, err := other.Get("/p"); err != nil {
		t.Errorf("a read while frozen: %v", err)
	}
	if ok, _, _ := vc.Exists("/frozen"); ok {
		t.Error("a write held by the freeze reached ZooKeeper")
	}
	sm.m.Unfreeze()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("held write: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held write did not complete after Unfreeze")
	}
	same(t, mc, vc, "/frozen")
}

// checkLeaderKilled kills ZooKeeper's leader: the mirror's client sees
// Disconnected, then its session again (never Expired), with its
// ephemeral node.
func checkLeaderKilled(t *testing.T, sm *servingMirror) {
	c, events := client(t, sm.addr)
	if _, err := c.Create("/survivor", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := sm.e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sm.e.Kill(leader); err != nil {
		t.Fatal(err)
	}
	disconnected := false
	for !disconnected || c.State() != zk.StateHasSession {
		select {
		case ev := <-events:
			switch ev.State {
			case zk.StateDisconnected:
				disconnected = true
			case zk.StateExpired:
				t.Fatal("the mirror's client saw its session expire")
			}
		case <-ctx.Done():
			t.Fatalf("no Disconnected then session within 60 s (disconnected=%v state %v)", disconnected, c.State())
		}
	}
	_, st, err := c.Get("/survivor")
	if err != nil || st.EphemeralOwner != c.SessionID() {
		t.Fatalf("ephemeral after the leader's death: %+v %v", st, err)
	}
	if _, err := c.Create("/after-kill", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Errorf("write after the leader's death: %v", err)
	}
}
