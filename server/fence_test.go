package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/test/ports"
	"github.com/zkserverd/zkserverd/txnlog"
)

// fenceSwitch is a server's replicated state whose fence the test sets
// and lifts (replication sets it when this member's tree disagrees with
// the ensemble's).
type fenceSwitch struct {
	Replica
	fence atomic.Pointer[error]
}

func (f *fenceSwitch) Fenced() error {
	if p := f.fence.Load(); p != nil {
		return *p
	}
	return nil
}

// set fences the member with err, or lifts the fence (nil).
func (f *fenceSwitch) set(err error) {
	if err == nil {
		f.fence.Store(nil)
		return
	}
	f.fence.Store(&err)
}

// newFenceable builds a server (not started) whose fence the test
// controls, with a supervisor that checks every 50 ms, logging to the
// returned capture.
func newFenceable(t *testing.T, cfg conf.Config) (*Server, *fenceSwitch, *testutil.LogCapture) {
	t.Helper()
	logger, logs := testutil.CaptureLogger(t, slog.LevelInfo)
	cfg.TickTime = 100
	s, err := New(Options{Config: cfg, Logger: logger})
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	fs := &fenceSwitch{Replica: s.node}
	s.node = fs
	return s, fs, logs
}

// checkFenceLogged waits for the fence's ERROR line naming reason, and
// checks that the fence was not reported as a lost quorum.
func checkFenceLogged(t *testing.T, logs *testutil.LogCapture, reason string) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, "the fence logged at ERROR", func() bool {
		return len(logs.Lines("level=ERROR", "fenced", reason)) == 1
	})
	if lines := logs.Lines("not in a working quorum"); len(lines) > 0 {
		t.Errorf("fence reported as a lost quorum: %q", lines)
	}
}

// TestFencedStandaloneServesNobody: a standalone server that is fenced
// drops its clients, refuses new sessions and logs why at ERROR; once the
// fence is lifted it serves again.
func TestFencedStandaloneServesNobody(t *testing.T) {
	s, fs, logs := newFenceable(t, opsConfig(t))
	testutil.Start(t, s)
	w, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 2000})
	if err != nil || resp.SessionID == 0 {
		t.Fatalf("session before the fence: %+v %v", resp, err)
	}
	const reason = "digest 0x1 differs from the leader's 0x2 at index 7"
	fs.set(errors.New(reason))
	testutil.Eventually(t, 5*time.Second, "serving to stop", func() bool { return !s.Serving() })
	if !w.closedWithin(5 * time.Second) {
		t.Fatal("a fenced server kept its client connection")
	}
	if _, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 2000}); err == nil {
		t.Fatalf("a fenced server created session 0x%x", resp.SessionID)
	}
	checkFenceLogged(t, logs, reason)

	fs.set(nil)
	testutil.Eventually(t, 5*time.Second, "serving once the fence is lifted", s.Serving)
	if _, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 2000}); err != nil || resp.SessionID == 0 {
		t.Fatalf("session after the fence: %+v %v", resp, err)
	}
}

// TestFencedAtStartServesNobody: a standalone server fenced before it
// starts (its data belongs to another ensemble, say) never serves.
func TestFencedAtStartServesNobody(t *testing.T) {
	s, fs, logs := newFenceable(t, opsConfig(t))
	const reason = "data directory belongs to ensemble 0xabc"
	fs.set(errors.New(reason))
	testutil.Start(t, s)
	checkFenceLogged(t, logs, reason)
	if s.Serving() {
		t.Fatal("a server fenced at start is serving")
	}
	if _, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 2000}); err == nil {
		t.Fatalf("a fenced server created session 0x%x", resp.SessionID)
	}
}

// TestFencedMemberServesNoReadOnlyClient: an ensemble member without a
// quorum and with readonlymode.enabled does not become a read-only server
// while it is fenced (it does once the fence is lifted, so the first check
// can fail), and a read-only server that gets fenced ends, closing its
// clients.
func TestFencedMemberServesNoReadOnlyClient(t *testing.T) {
	var fs *fenceSwitch
	var logs *testutil.LogCapture
	const reason = "tree digest differs from the leader's"
	e := testutil.NewEnsemble(t, testutil.EnsembleSpec[*Server]{Size: 3, Ports: ports.ForServer(),
		Base: func(int) conf.Config {
			cfg := opsConfig(t)
			cfg.ReadOnlyModeEnabled = true
			cfg.MaxSessionTimeout = 60000 // no local session expires during the test
			return cfg
		},
		New: func(_ int, cfg conf.Config) (*Server, error) {
			var s *Server
			s, fs, logs = newFenceable(t, cfg)
			fs.set(errors.New(reason))
			return s, nil
		}})
	e.Start(0)
	s := e.Member(0)
	for end := time.Now().Add(s.readOnlyDelay() + time.Second); time.Now().Before(end); {
		if s.readOnly() {
			t.Fatal("a fenced member entered read-only mode")
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkFenceLogged(t, logs, reason)

	fs.set(nil)
	testutil.Eventually(t, 10*time.Second, "read-only mode once the fence is lifted", s.readOnly)
	ro, _, err := dialWire(t, s, roRequest(60000))
	if err != nil {
		t.Fatalf("read-only handshake: %v", err)
	}
	fs.set(errors.New(reason))
	if !ro.closedWithin(5 * time.Second) {
		t.Fatal("a fenced member kept its read-only client")
	}
	testutil.Eventually(t, 5*time.Second, "read-only mode to end", func() bool { return !s.readOnly() })
	if _, _, err := dialWire(t, s, roRequest(60000)); err == nil {
		t.Fatal("a fenced member accepted a read-only client")
	}
}

// seedReplica is the replicated state markServing sees: an ensemble
// member (or a standalone server) whose submissions and learned peers
// the test reads.
type seedReplica struct {
	Replica
	tree      *datatree.Tree
	clustered bool
	leader    bool
	submitted []*txnlog.Txn
	learned   [][]replication.Peer
}

func (r *seedReplica) Tree() *datatree.Tree                { return r.tree }
func (r *seedReplica) Clustered() bool                     { return r.clustered }
func (r *seedReplica) IsLeader() bool                      { return r.leader }
func (r *seedReplica) Role() string                        { return "follower" }
func (r *seedReplica) LastZxid() int64                     { return 0 }
func (r *seedReplica) LearnPeers(peers []replication.Peer) { r.learned = append(r.learned, peers) }
func (r *seedReplica) Submit(t *txnlog.Txn) <-chan replication.Outcome {
	r.submitted = append(r.submitted, t)
	ch := make(chan replication.Outcome, 1)
	ch <- replication.Outcome{Result: &datatree.Result{}}
	return ch
}

// ensembleConfig is member 1's configuration in a three-member ensemble.
func ensembleConfig(t *testing.T) conf.Config {
	cfg := opsConfig(t)
	cfg.MyID = 1
	for id := int64(1); id <= 3; id++ {
		cfg.Servers = append(cfg.Servers, conf.Server{ID: id, Host: "127.0.0.1", PeerPort: 2887 + int(id), ElectionPort: 3887 + int(id), ClientPort: 2181})
	}
	return cfg
}

// TestMarkServingSeedsConfigThroughTheLog: only an ensemble's leader
// seeds an empty /zookeeper/config, with an OpInitConfig transaction of
// the server's own (session 0) carrying the configuration files' text; a
// member that finds the node set learns its server lines instead.
func TestMarkServingSeedsConfigThroughTheLog(t *testing.T) {
	ensemble := ensembleConfig(t)
	text := dynamicConfigText(ensemble)
	cases := []struct {
		name                  string
		cfg                   conf.Config
		clustered, leader     bool
		configSet             bool
		wantSubmit, wantLearn int
	}{
		{name: "leader, empty node", cfg: ensemble, clustered: true, leader: true, wantSubmit: 1},
		{name: "follower, empty node", cfg: ensemble, clustered: true},
		{name: "leader, node set", cfg: ensemble, clustered: true, leader: true, configSet: true, wantLearn: 1},
		{name: "follower, node set", cfg: ensemble, clustered: true, configSet: true, wantLearn: 1},
		{name: "standalone", cfg: opsConfig(t), leader: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &seedReplica{tree: datatree.New(datatree.Config{}), clustered: tc.clustered, leader: tc.leader}
			if tc.configSet {
				r.tree.SetConfigNode(text, 0, 1)
			}
			s := &Server{cfg: tc.cfg, log: testutil.Logger(t, slog.LevelWarn), node: r}
			s.ctx, s.cancel = context.WithCancel(context.Background())
			s.markServing()
			s.cancel()
			s.wg.Wait()
			if !s.Serving() || len(r.submitted) != tc.wantSubmit || len(r.learned) != tc.wantLearn {
				t.Fatalf("serving %v, %d submitted, %d learned; want true, %d, %d",
					s.Serving(), len(r.submitted), len(r.learned), tc.wantSubmit, tc.wantLearn)
			}
			if tc.wantSubmit > 0 {
				checkInitConfig(t, r.submitted[0], text)
			}
			if !tc.configSet && len(s.configData()) != 0 {
				t.Fatal("markServing wrote /zookeeper/config outside the log")
			}
		})
	}
}

// checkInitConfig checks the seed transaction.
func checkInitConfig(t *testing.T, txn *txnlog.Txn, text []byte) {
	t.Helper()
	req, ok := txn.Tree.Request.(*jute.SetDataRequest)
	if txn.Tree.Type != txnlog.OpInitConfig || txn.Tree.SessionID != 0 || !ok {
		t.Fatalf("seed txn: type %v session %d request %T", txn.Tree.Type, txn.Tree.SessionID, txn.Tree.Request)
	}
	if req.Path != configPath || string(req.Data) != string(text) || req.Version != -1 {
		t.Fatalf("seed request: %q %q version %d; want %q %q -1", req.Path, req.Data, req.Version, configPath, text)
	}
}

// TestAppliedConfigIsLearned: the apply hook learns the server lines of
// an applied reconfig and of an applied seed, and nothing from a seed that
// found the node set.
func TestAppliedConfigIsLearned(t *testing.T) {
	text := dynamicConfigText(ensembleConfig(t))
	seed := &jute.SetDataRequest{Path: configPath, Data: text, Version: -1}
	cases := []struct {
		name    string
		op      jute.OpCode
		req     jute.Record
		res     datatree.Result
		learned int
	}{
		{"reconfig", txnlog.OpSetConfig, seed, datatree.Result{Response: &jute.GetDataResponse{Data: text}}, 1},
		{"seed", txnlog.OpInitConfig, seed, datatree.Result{}, 1},
		{"seed with the node's data", txnlog.OpInitConfig, seed, datatree.Result{Response: &jute.GetDataResponse{Data: text}}, 1},
		{"seed of a set node", txnlog.OpInitConfig, seed, datatree.Result{Err: jute.NodeExists}, 0},
		{"failed reconfig", txnlog.OpSetConfig, seed, datatree.Result{Err: jute.BadVersion}, 0},
	}
	for _, tc := range cases {
		r := &seedReplica{}
		s := &Server{log: testutil.Logger(t, slog.LevelWarn), node: r, serverID: 1}
		(*observer)(s).Applied(&txnlog.Txn{Tree: datatree.Txn{Type: tc.op, Request: tc.req}}, 0, &tc.res)
		if len(r.learned) != tc.learned || tc.learned > 0 && len(r.learned[0]) != 3 {
			t.Errorf("%s: learned %v, want the three members %d time(s)", tc.name, r.learned, tc.learned)
		}
	}
}

// TestEnsembleSeedsConfigThroughTheLog: every member of a new ensemble
// ends up with the same /zookeeper/config, set by the leader's seed
// through the log: the same text and the same mtime (the seed's
// transaction time, not each member's clock), and no zxid consumed.
func TestEnsembleSeedsConfigThroughTheLog(t *testing.T) {
	e := testutil.StartEnsemble(t, testutil.EnsembleSpec[*Server]{Size: 3, Ports: ports.ForServer(),
		Base: func(int) conf.Config { return opsConfig(t) },
		New: func(_ int, cfg conf.Config) (*Server, error) {
			return New(Options{Config: cfg, Logger: testutil.Logger(t, slog.LevelWarn)})
		}})
	want := string(dynamicConfigText(e.Config(0)))
	var stats [3]jute.Stat
	for i := range 3 {
		e.WaitServing(i)
		s := e.Member(i)
		testutil.Eventually(t, 10*time.Second, "the seeded configuration", func() bool {
			return string(s.configData()) == want
		})
		_, stats[i], _ = s.node.Tree().GetData(configPath, nil, nil)
	}
	for i, st := range stats {
		if st.Mtime != stats[0].Mtime || st.Mzxid != 0 {
			t.Errorf("member %d: /zookeeper/config mtime %d mzxid %#x; member 1: mtime %d", i+1, st.Mtime, st.Mzxid, stats[0].Mtime)
		}
	}
	for i := range 3 {
		if zxid := e.Member(i).node.LastZxid(); zxid&0xffffffff != 0 {
			t.Errorf("member %d: the seed consumed a zxid: last zxid %#x", i+1, zxid)
		}
	}
}

// holdingReplica holds every write submitted after hold is set: its
// outcome never comes, as for a mirror's write held by a takeover's
// freeze when the ZooKeeper voters stop.
type holdingReplica struct {
	Replica
	hold atomic.Bool
	held atomic.Int32
}

func (h *holdingReplica) Submit(t *txnlog.Txn) <-chan replication.Outcome {
	if !h.hold.Load() || t.Tree.Type == jute.OpCreateSession {
		return h.Replica.Submit(t)
	}
	h.held.Add(1)
	return make(chan replication.Outcome, 1)
}

// TestAbortSendsNoReplyPastAMissingOne: a connection closed while a write
// waits for its outcome sends no reply of the requests after that write
// (their replies would leave ahead of the write's, which never comes: a
// client sees the wrong xid). Found by make migrate: the voters stopped
// during a takeover's freeze, and kazoo got the reply of a read sent after
// two held writes.
func TestAbortSendsNoReplyPastAMissingOne(t *testing.T) {
	s, fs, _ := newFenceable(t, opsConfig(t))
	hr := &holdingReplica{Replica: fs}
	s.node = hr
	testutil.Start(t, s)
	for round := range 20 {
		w, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 4000})
		if err != nil || resp.SessionID == 0 {
			t.Fatalf("round %d: session: %+v %v", round, resp, err)
		}
		hr.hold.Store(true)
		before := hr.held.Load()
		w.send(&jute.RequestHeader{Xid: 1, Type: jute.OpCreate},
			&jute.CreateRequest{Path: fmt.Sprintf("/held%d", round), ACL: jute.OpenACLUnsafe})
		w.send(&jute.RequestHeader{Xid: 2, Type: jute.OpExists}, &jute.PathWatchRequest{Path: "/"})
		testutil.Eventually(t, 5*time.Second, "the write held", func() bool { return hr.held.Load() > before })
		time.Sleep(10 * time.Millisecond) // the read queued behind the write
		fs.set(errors.New("a test fence"))
		w.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if frame, err := jute.ReadFrame(w.br, 1<<20, nil); err == nil {
			var rh jute.ReplyHeader
			rh.Decode(jute.NewDecoder(frame))
			t.Fatalf("round %d: reply xid %d sent while the write of xid 1 has none", round, rh.Xid)
		}
		fs.set(nil)
		hr.hold.Store(false)
		testutil.Eventually(t, 5*time.Second, "serving again", s.Serving)
	}
}

// quorumSwitch is an ensemble member's replicated state whose quorum the
// test takes away and gives back.
type quorumSwitch struct {
	Replica
	lost atomic.Bool
}

func (q *quorumSwitch) Clustered() bool { return true }

func (q *quorumSwitch) QuorumHealth(maxSilence time.Duration) error {
	if q.lost.Load() {
		return errors.New("a test without a quorum")
	}
	return q.Replica.QuorumHealth(maxSilence)
}

func (q *quorumSwitch) WaitReady(ctx context.Context) error {
	for q.lost.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return q.Replica.WaitReady(ctx)
}

// TestStartingMemberHoldsHandshakes: a client that connects to a member
// that has not served since it started (a restart, a takeover's switch)
// waits for it instead of being closed, and gets its session once the
// member serves; once the member has served, a member without a quorum
// closes new clients at once, as ZooKeeper does.
func TestStartingMemberHoldsHandshakes(t *testing.T) {
	s, fs, _ := newFenceable(t, opsConfig(t))
	q := &quorumSwitch{Replica: fs}
	q.lost.Store(true)
	s.node = q
	testutil.Start(t, s)
	time.AfterFunc(400*time.Millisecond, func() { q.lost.Store(false) })
	began := time.Now()
	_, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 4000})
	if err != nil || resp.SessionID == 0 {
		t.Fatalf("a client of a starting member: %+v %v, want a session once it serves", resp, err)
	}
	if waited := time.Since(began); waited < 300*time.Millisecond || waited > startHold {
		t.Errorf("the handshake took %v, want about the 400 ms until the member served", waited)
	}

	q.lost.Store(true)
	testutil.Eventually(t, 5*time.Second, "serving to stop", func() bool { return !s.Serving() })
	began = time.Now()
	if _, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 4000}); err == nil {
		t.Fatalf("a member without a quorum created session 0x%x", resp.SessionID)
	}
	if waited := time.Since(began); waited > time.Second {
		t.Errorf("a member that served before held a client %v before closing it", waited)
	}
}
