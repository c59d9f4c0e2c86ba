package zab

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/internal/zkproc"
	"github.com/zkserverd/zkserverd/jute"
)

// The integration test's sids: voters 1, 3 and 5, and two zab observers,
// 4 (voter 5 has a larger sid, so it dials back) and 2 (voters 3 and 5
// dial back).
const (
	obsA = 4
	obsB = 2
	obsC = 6 // presents a zxid past the leader's: TRUNC
)

// servers turns the ensemble's lines into Config.Servers.
func servers(t *testing.T, e *zkproc.Ensemble) []Server {
	t.Helper()
	var out []Server
	for id, line := range e.ServerLines() {
		s, err := ParseServerLine(id, line)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("ZAB_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func startObserver(t *testing.T, e *zkproc.Ensemble, id int64, h Handler, extra ...Server) *Observer {
	t.Helper()
	o, err := Start(Config{MyID: id, Servers: append(servers(t, e), extra...), Handler: h, Logger: testLogger(t),
		InitTimeout: 20 * time.Second, SyncTimeout: 5 * time.Second, FindTimeout: 20 * time.Second, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func waitUpToDate(t *testing.T, o *Observer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := o.WaitUpToDate(ctx); err != nil {
		t.Fatalf("observer %d never synced: %v (fatal: %v)", o.cfg.MyID, err, o.Err())
	}
}

// writer writes through go-zookeeper to the voters and remembers each
// write's zxid and path.
type writer struct {
	t     *testing.T
	c     *zk.Conn
	zxids []int64
	paths map[int64]string
}

func (w *writer) create(path string) {
	w.t.Helper()
	if _, err := w.c.Create(path, []byte("v-"+path), 0, zk.WorldACL(zk.PermAll)); err != nil {
		w.t.Fatalf("create %s: %v", path, err)
	}
	_, st, err := w.c.Exists(path)
	if err != nil || st == nil {
		w.t.Fatalf("exists %s: %v", path, err)
	}
	w.zxids = append(w.zxids, st.Czxid)
	w.paths[st.Czxid] = path
}

func (w *writer) set(path string) {
	w.t.Helper()
	st, err := w.c.Set(path, []byte("w-"+path), -1)
	if err != nil {
		w.t.Fatalf("set %s: %v", path, err)
	}
	w.zxids = append(w.zxids, st.Mzxid)
	w.paths[st.Mzxid] = path
}

// waitTxns waits until r holds every write from index from on as a
// transaction (or, at or below its snapshot's zxid, in the snapshot).
func (w *writer) waitTxns(r *recorder, from int, name string) {
	w.t.Helper()
	waitFor(w.t, 30*time.Second, name+" gets every write", func() bool {
		for _, z := range w.zxids[from:] {
			if r.txn(z) == nil {
				r.mu.Lock()
				inSnap := z <= r.snapZxid && r.paths[w.paths[z]]
				r.mu.Unlock()
				if !inSnap {
					return false
				}
			}
		}
		return true
	})
}

// TestObserverAgainstZooKeeper runs zab observers against a real
// three-voter ZooKeeper 3.8 ensemble: the first follows from the start,
// the second joins late (presenting zxid 0, so it gets a SNAP, then
// INFORMs), both get every write with no gap or repeat, the first's
// forwarded requests are committed and come back with their session and
// cxid, sessions revalidate, and both follow a new leader after the
// leader is killed.
func TestObserverAgainstZooKeeper(t *testing.T) {
	zkproc.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ens, err := zkproc.Launch(ctx, zkproc.Spec{Dir: t.TempDir(), Voters: []int64{1, 3, 5},
		Outside: []int64{obsB, obsA, obsC}, Ports: pickerAdapter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer ens.Close()
	defer func() {
		if t.Failed() {
			for _, m := range ens.Members() {
				if !m.Outside {
					if b, err := os.ReadFile(m.Log()); err == nil {
						t.Logf("member %d log tail:\n%s", m.ID, tail(string(b), 3000))
					}
				}
			}
		}
	}()

	recA := newRecorder()
	a := startObserver(t, ens, obsA, recA)
	waitUpToDate(t, a)

	c, _, err := zk.Connect(ens.ClientAddrs(), 10*time.Second, zk.WithLogger(testutil.QuietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := &writer{t: t, c: c, paths: make(map[int64]string)}
	w.create("/zab")
	for i := range 20 {
		w.create(fmt.Sprintf("/zab/n%d", i))
		w.set(fmt.Sprintf("/zab/n%d", i))
	}
	w.waitTxns(recA, 0, "observer A")
	for _, z := range w.zxids {
		if data := recA.txn(z); data == nil {
			t.Errorf("write 0x%x did not reach observer A as a Txn", z)
		}
	}

	// A late observer presenting zxid 0: the leader has history, so SNAP.
	recB := newRecorder()
	recB.present = 0
	b := startObserver(t, ens, obsB, recB)
	waitUpToDate(t, b)
	if st := b.Stats(); st.Snaps != 1 {
		t.Errorf("late observer stats %+v, want one SNAP", st)
	}
	recB.mu.Lock()
	if !recB.paths["/zab/n19"] || recB.snapZxid < w.zxids[len(w.zxids)-1] {
		t.Errorf("late observer's snapshot at 0x%x lacks the earlier writes (has /zab/n19: %v)", recB.snapZxid, recB.paths["/zab/n19"])
	}
	recB.mu.Unlock()
	mark := len(w.zxids)
	for i := range 10 {
		w.set(fmt.Sprintf("/zab/n%d", i))
	}
	w.waitTxns(recB, mark, "observer B")
	w.waitTxns(recA, 0, "observer A")
	for _, z := range w.zxids[mark:] {
		if recB.txn(z) == nil {
			t.Errorf("write 0x%x after the SNAP did not reach observer B as an INFORM", z)
		}
	}

	// An observer ahead of the leader in its epoch is told to truncate.
	recC := newRecorder()
	recC.present = w.zxids[len(w.zxids)-1] + 5
	oc := startObserver(t, ens, obsC, recC)
	waitUpToDate(t, oc)
	if st := oc.Stats(); st.Truncs != 1 || recC.lastZxid() > w.zxids[len(w.zxids)-1] {
		t.Errorf("observer ahead: stats %+v, at 0x%x after the TRUNC; the last write is 0x%x", st, recC.lastZxid(), w.zxids[len(w.zxids)-1])
	}
	mark = len(w.zxids)
	w.create("/zab/trunc")
	w.waitTxns(recC, mark, "observer C")
	oc.Close()

	// Client work forwarded through observer A.
	session := int64(obsA)<<56 | time.Now().UnixNano()&0xffffffffff
	touch := startToucher(a, session)
	defer touch()
	timeout := int32(10000)
	if err := a.Request(session, 0, int32(jute.OpCreateSession), be32(timeout), nil); err != nil {
		t.Fatal(err)
	}
	waitTxn(t, recA, session, 0, int32(jute.OpCreateSession))
	auth := []jute.ID{{Scheme: "ip", ID: "127.0.0.1"}}
	createReq := &jute.CreateRequest{Path: "/zab/req", Data: []byte("from zab"), ACL: jute.OpenACLUnsafe}
	if err := a.Request(session, 1, int32(jute.OpCreate), jute.Encode(createReq), auth); err != nil {
		t.Fatal(err)
	}
	h := waitTxn(t, recA, session, 1, int32(jute.OpCreate))
	if data, _, err := c.Get("/zab/req"); err != nil || string(data) != "from zab" {
		t.Errorf("/zab/req through the ensemble: %q, %v", data, err)
	}
	if _, st, _ := c.Exists("/zab/req"); st == nil || st.Czxid != h.Zxid {
		t.Errorf("/zab/req czxid %+v, the INFORM's zxid 0x%x", st, h.Zxid)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	if err := a.Sync(sctx, session, 2, "/zab", auth); err != nil {
		t.Errorf("sync: %v", err)
	}
	scancel()
	checkRevalidate(t, a, session, true)
	checkRevalidate(t, a, 0x7777, false)

	// Kill the ZooKeeper leader: both observers find the new one.
	leader, err := ens.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	syncsA, syncsB := a.Stats().Syncs, b.Stats().Syncs
	if err := ens.Kill(leader); err != nil {
		t.Fatal(err)
	}
	newLeader, err := ens.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "both observers re-sync with the new leader", func() bool {
		la, okA := a.Leader()
		lb, okB := b.Leader()
		return okA && okB && la == newLeader && lb == newLeader &&
			a.Stats().Syncs > syncsA && b.Stats().Syncs > syncsB
	})
	mark = len(w.zxids)
	for i := range 10 {
		w.set(fmt.Sprintf("/zab/n%d", i))
	}
	w.create("/zab/after")
	w.waitTxns(recA, 0, "observer A after failover")
	w.waitTxns(recB, mark, "observer B after failover")
	if Epoch(w.zxids[len(w.zxids)-1]) <= Epoch(w.zxids[mark-1]) {
		t.Errorf("writes after the failover are in epoch %d, before it %d", Epoch(w.zxids[len(w.zxids)-1]), Epoch(w.zxids[mark-1]))
	}

	// The session survives: revalidate moves it to the new link, and a
	// request on it is committed.
	checkRevalidate(t, a, session, true)
	createReq.Path = "/zab/req2"
	if err := a.Request(session, 3, int32(jute.OpCreate), jute.Encode(createReq), auth); err != nil {
		t.Fatal(err)
	}
	waitTxn(t, recA, session, 3, int32(jute.OpCreate))
	if err := a.Request(session, 4, int32(jute.OpCloseSession), nil, nil); err != nil {
		t.Fatal(err)
	}
	waitTxn(t, recA, session, 4, int32(jute.OpCloseSession))

	for name, r := range map[string]*recorder{"observer A": recA, "observer B": recB} {
		r.checkContiguous(t, name)
	}
	for _, o := range []*Observer{a, b} {
		if err := o.Err(); err != nil {
			t.Errorf("observer %d stopped: %v", o.cfg.MyID, err)
		}
	}
	t.Logf("observer A: %+v; observer B: %+v; leader %d then %d", a.Stats(), b.Stats(), leader, newLeader)
}

func be32(v int32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }

// startToucher keeps session alive through o's pings until stopped.
func startToucher(o *Observer, session int64) (stop func()) {
	done := make(chan struct{})
	go func() {
		tk := time.NewTicker(500 * time.Millisecond)
		defer tk.Stop()
		for {
			o.Touch(map[int64]int32{session: 10000})
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	}()
	return func() { close(done) }
}

// waitTxn waits for the transaction of (session, cxid) and checks its type.
func waitTxn(t *testing.T, r *recorder, session int64, cxid, op int32) TxnHeader {
	t.Helper()
	var h TxnHeader
	waitFor(t, 20*time.Second, fmt.Sprintf("txn of session 0x%x cxid %d", session, cxid), func() bool {
		var ok bool
		h, ok = r.find(func(h TxnHeader) bool { return h.ClientID == session && h.Cxid == cxid })
		return ok
	})
	if h.Type != op {
		t.Errorf("txn of session 0x%x cxid %d has type %d, want %d", session, cxid, h.Type, op)
	}
	return h
}

func checkRevalidate(t *testing.T, o *Observer, session int64, want bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	valid, err := o.Revalidate(ctx, session, 10000)
	if err != nil || valid != want {
		t.Errorf("revalidate 0x%x: %v, %v; want %v", session, valid, err, want)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// pickerAdapter lends the package's picker to zkproc.
type pickerAdapter struct{ t *testing.T }

func (p pickerAdapter) Pick() (int, error) { return picker.Pick() }

// TestObserverAddedByReconfig: with reconfigEnabled, an observer whose
// line a reconfig -add brings in joins and syncs; a second reconfig while
// it observes reaches it as INFORMANDACTIVATE, whose transaction it
// applies and whose configuration it adopts.
func TestObserverAddedByReconfig(t *testing.T) {
	zkproc.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if d := os.Getenv("ZAB_KEEP_DIR"); d != "" {
		dir = d
	}
	ens, err := zkproc.Launch(ctx, zkproc.Spec{Dir: dir, Voters: []int64{1, 2, 3}, Joining: []int64{8, 9},
		Ports: pickerAdapter{t}, ReconfigEnabled: true, JVMProps: []string{"-Dzookeeper.skipACL=yes"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ens.Close()
	c, _, err := zk.Connect(ens.ClientAddrs(), 10*time.Second, zk.WithLogger(testutil.QuietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m8 := ens.Member(8)
	st, err := c.IncrementalReconfig([]string{fmt.Sprintf("server.8=%s", m8.Line())}, nil, -1)
	if err != nil {
		t.Fatalf("reconfig -add server.8: %v", err)
	}
	t.Logf("server.8 added by the reconfig at 0x%x", st.Mzxid)

	own, err := ParseServerLine(8, m8.Line())
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	o := startObserver(t, ens, 8, rec, own)
	waitUpToDate(t, o)

	st, err = c.IncrementalReconfig([]string{fmt.Sprintf("server.9=%s", ens.Member(9).Line())}, nil, -1)
	if err != nil {
		t.Fatalf("reconfig -add server.9: %v", err)
	}
	waitFor(t, 30*time.Second, "the second reconfig reaches the observer", func() bool { return rec.txn(st.Mzxid) != nil })
	if h, _ := ParseTxnHeader(rec.txn(st.Mzxid)); h.Type != opReconfig {
		t.Errorf("txn 0x%x has type %d, want reconfig", st.Mzxid, h.Type)
	}
	waitFor(t, 10*time.Second, "the observer adopts the new configuration", func() bool {
		v := o.el.View()
		_, has9 := v.Server(9)
		return v.Version == st.Mzxid && has9
	})
	if err := o.Err(); err != nil {
		t.Errorf("observer stopped: %v", err)
	}
	rec.checkContiguous(t, "observer 8")
}
