package test

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
)

// member is one member of an ensemble: a server and its operator
// surfaces (AdminServer).
type member struct {
	*server.Server
	ops *ops.Surfaces
}

// ensemble is an in-process cluster of members on loopback.
type ensemble = testutil.Ensemble[*member]

// ensembleSpec describes size members of testConfig with a 300 ms tick,
// initLimit 10 and syncLimit 5, each tweak applied to every member's
// configuration.
func ensembleSpec(t *testing.T, size int, tweaks ...func(*conf.Config)) testutil.EnsembleSpec[*member] {
	return testutil.EnsembleSpec[*member]{Size: size, Ports: portPicker,
		Base: func(int) conf.Config {
			cfg := testConfig(t, t.TempDir())
			cfg.TickTime = 300
			cfg.InitLimit, cfg.SyncLimit = 10, 5
			for _, tweak := range tweaks {
				tweak(&cfg)
			}
			return cfg
		},
		New: func(_ int, cfg conf.Config) (*member, error) {
			o := ops.New(ops.Options{})
			srv, err := server.New(server.Options{Config: cfg, Logger: testutil.Logger(t, slog.LevelInfo), Operator: o})
			return &member{Server: srv, ops: o}, err
		}}
}

// startEnsemble starts size members (ids in observers join as observers)
// and waits until every one serves.
func startEnsemble(t *testing.T, size int, observers ...int64) *ensemble {
	t.Helper()
	spec := ensembleSpec(t, size)
	spec.Observers = observers
	return testutil.StartEnsemble(t, spec)
}

func TestEnsembleReplicatesAndReadsLocally(t *testing.T) {
	e := startEnsemble(t, 3)
	lead := e.Leader()
	follower := (lead + 1) % 3
	if m := e.Mode(follower); m != "follower" {
		t.Fatalf("member %d mode %q", follower+1, m)
	}
	c, _ := testutil.Connect(t, e.Addr(follower), 4*time.Second)
	for i := 0; i < 20; i++ {
		if _, err := c.Create(fmt.Sprintf("/n%d", i), []byte{byte(i)}, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	// Per-session order: the write's reply means this member applied it.
	if data, st, err := c.Get("/n19"); err != nil || data[0] != 19 || st.Czxid>>32 == 0 {
		t.Fatalf("read own write on a follower: %v %+v %v", data, st, err)
	}
	other, _ := testutil.Connect(t, e.Addr((lead+2)%3), 4*time.Second)
	if _, err := other.Sync("/"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := other.Exists("/n19"); err != nil || !ok {
		t.Fatalf("read after sync on another follower: %v %v", ok, err)
	}
	leadMntr, _ := testutil.FourLetter(e.Addr(lead), "mntr")
	for _, want := range []string{"zk_server_state\tleader\n", "zk_peer_state\tleading - broadcast\n",
		"zk_synced_followers\t2\n", "zk_learners\t2\n", "zk_quorum_size\t2\n"} {
		if !strings.Contains(leadMntr, want) {
			t.Errorf("leader mntr lacks %q", want)
		}
	}
	if srvr, _ := testutil.FourLetter(e.Addr(lead), "srvr"); !strings.Contains(srvr, "Proposal sizes last/min/max: ") {
		t.Errorf("leader srvr lacks the proposal sizes line:\n%s", srvr)
	}
	if f, _ := testutil.FourLetter(e.Addr(follower), "mntr"); !strings.Contains(f, "zk_peer_state\tfollowing - broadcast\n") {
		t.Errorf("follower mntr lacks its peer state:\n%s", f)
	}
	data, _, err := other.Get("/zookeeper/config")
	if err != nil || !strings.Contains(string(data), "server.1=127.0.0.1:") || !strings.HasSuffix(string(data), "\nversion=0") {
		t.Fatalf("/zookeeper/config = %q %v", data, err)
	}
}

func TestEnsembleSessionSurvivesLeaderFailover(t *testing.T) {
	e := startEnsemble(t, 3)
	lead := e.Leader()
	follower := (lead + 1) % 3
	c, _ := testutil.Connect(t, e.Addr(follower), 4*time.Second)
	sid := c.SessionID()
	if _, err := c.Create("/eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e.Stop(lead)
	newLead := e.Leader()
	t.Logf("new leader (member %d) after %v", newLead+1, time.Since(start))
	var err error
	testutil.Eventually(t, 10*time.Second, "a write after failover", func() bool {
		_, err = c.Create("/after", nil, 0, zk.WorldACL(zk.PermAll))
		return err == nil || errors.Is(err, zk.ErrNodeExists)
	})
	if c.SessionID() != sid {
		t.Fatalf("session changed across failover: %x -> %x", sid, c.SessionID())
	}
	if ok, st, err := c.Exists("/eph"); err != nil || !ok || st.EphemeralOwner != sid {
		t.Fatalf("ephemeral after failover: %v %+v %v", ok, st, err)
	}
}

func TestEnsembleExpiryRemovesEphemeralEverywhere(t *testing.T) {
	e := startEnsemble(t, 3)
	lead := e.Leader()
	follower := (lead + 1) % 3
	raw := dialRaw(t, e.Addr(follower))
	if _, err := raw.handshake(jute.ConnectRequest{TimeOut: 600}); err != nil {
		t.Fatal(err)
	}
	if h, _ := raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/gone", ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral}); h.Err != jute.OK {
		t.Fatalf("create: %v", h.Err)
	}
	// Silence: the leader expires the session; every member deletes it.
	raw.expectClosed(10 * time.Second)
	for i := range e.Size() {
		c, _ := testutil.Connect(t, e.Addr(i), 4*time.Second)
		testutil.Eventually(t, 5*time.Second, fmt.Sprintf("ephemeral gone on member %d", i+1), func() bool {
			ok, _, err := c.Exists("/gone")
			return err == nil && !ok
		})
	}
}

func TestEnsembleResumeOnAnotherMember(t *testing.T) {
	e := startEnsemble(t, 3)
	raw := dialRaw(t, e.Addr(0))
	resp, err := raw.handshake(jute.ConnectRequest{TimeOut: 4000})
	if err != nil {
		t.Fatal(err)
	}
	raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/mine", ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral})
	h, _ := raw.call(jute.OpExists, &jute.PathWatchRequest{Path: "/mine"})
	raw.c.Close()
	moved := dialRaw(t, e.Addr(1))
	r, err := moved.handshake(jute.ConnectRequest{SessionID: resp.SessionID, Passwd: resp.Passwd, TimeOut: 4000, LastZxidSeen: h.Zxid})
	if err != nil || r.SessionID != resp.SessionID {
		t.Fatalf("resume on another member: %+v %v", r, err)
	}
	if h, _ := moved.call(jute.OpExists, &jute.PathWatchRequest{Path: "/mine"}); h.Err != jute.OK {
		t.Fatalf("ephemeral seen from the new member: %v", h.Err)
	}
}

func TestEnsembleRestartEveryMemberKeepsWrites(t *testing.T) {
	e := startEnsemble(t, 3)
	c, _ := testutil.Connect(t, e.Addr(0), 4*time.Second)
	var mu sync.Mutex
	acked := map[string]bool{}
	for i := 0; i < 100; i++ {
		p := fmt.Sprintf("/k%d", i)
		if _, err := c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		acked[p] = true
		mu.Unlock()
	}
	c.Close()
	for i := range e.Size() {
		e.Stop(i)
	}
	for i := range e.Size() {
		e.Start(i)
	}
	for i := range e.Size() {
		e.WaitServing(i)
	}
	for i := range e.Size() {
		c, _ := testutil.Connect(t, e.Addr(i), 4*time.Second)
		for p := range acked {
			if data, _, err := c.Get(p); err != nil || string(data) != p {
				t.Fatalf("member %d lost %s after a full restart: %v", i+1, p, err)
			}
		}
	}
}

func TestEnsembleObserverServesReads(t *testing.T) {
	e := startEnsemble(t, 4, 4)
	if m := e.Mode(3); m != "observer" {
		t.Fatalf("member 4 mode %q, want observer", m)
	}
	c, _ := testutil.Connect(t, e.Addr(3), 4*time.Second)
	if _, err := c.Create("/via-observer", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if data, _, err := c.Get("/via-observer"); err != nil || string(data) != "x" {
		t.Fatalf("observer read: %q %v", data, err)
	}
}

func TestEnsembleFiveMembersToleratesTwoFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("5-member cluster; run without -short")
	}
	e := startEnsemble(t, 5)
	lead := e.Leader()
	c, _ := testutil.Connect(t, e.Addr((lead+1)%5), 4*time.Second)
	if _, err := c.Create("/five", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	e.Stop(lead)
	e.Stop((lead + 2) % 5)
	testutil.Eventually(t, 15*time.Second, "a write with two members down", func() bool {
		_, err := c.Set("/five", []byte("still"), -1)
		return err == nil
	})
}

// TestEnsembleSessionMoved: after a client resumes its session on member B,
// its old connection to member A still serves reads, but a write sent there
// fails as SessionMoved and A closes that connection without a reply.
func TestEnsembleSessionMoved(t *testing.T) {
	e := startEnsemble(t, 3)
	a := dialRaw(t, e.Addr(0))
	resp, err := a.handshake(jute.ConnectRequest{TimeOut: 4000})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := a.call(jute.OpCreate, &jute.CreateRequest{Path: "/moved", ACL: jute.OpenACLUnsafe})
	b := dialRaw(t, e.Addr(1))
	if r, err := b.handshake(jute.ConnectRequest{SessionID: resp.SessionID, Passwd: resp.Passwd, TimeOut: 4000, LastZxidSeen: h.Zxid}); err != nil || r.SessionID != resp.SessionID {
		t.Fatalf("resume on member 2: %+v %v", r, err)
	}
	if h, _ := a.call(jute.OpExists, &jute.PathWatchRequest{Path: "/moved"}); h.Err != jute.OK {
		t.Fatalf("read on the old connection: %v", h.Err)
	}
	a.send(&jute.RequestHeader{Xid: 99, Type: jute.OpSetData}, &jute.SetDataRequest{Path: "/moved", Data: []byte("x"), Version: -1})
	a.expectClosed(5 * time.Second)
	if h, _ := b.call(jute.OpSetData, &jute.SetDataRequest{Path: "/moved", Data: []byte("y"), Version: -1}); h.Err != jute.OK {
		t.Fatalf("write on the new connection: %v", h.Err)
	}
}
