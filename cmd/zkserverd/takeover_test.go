package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/mirror"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/test/ports"
	"github.com/zkserverd/zkserverd/zab"
)

func TestChooseSeeder(t *testing.T) {
	st := func(myid int64, zxid string) mirrorStatus {
		return mirrorStatus{MyID: myid, LastZxid: zxid, takeoverStatus: takeoverStatus{Seedable: true}}
	}
	unseedable := func(myid int64, zxid string) mirrorStatus { return mirrorStatus{MyID: myid, LastZxid: zxid} }
	tests := []struct {
		name     string
		statuses []mirrorStatus
		want     int64 // the seeder's myid, 0: none
		safe     bool  // checkSeeder lets the takeover go on
	}{
		{"highest zxid", []mirrorStatus{st(4, "0x100000005"), st(5, "0x100000007"), st(6, "0x100000006")}, 5, true},
		{"a later epoch wins", []mirrorStatus{st(4, "0x1000000ff"), st(5, "0x200000001")}, 5, true},
		{"equal: lowest myid", []mirrorStatus{st(6, "0x100000007"), st(5, "0x100000007"), st(4, "0x100000006")}, 5, true},
		{"one mirror", []mirrorStatus{st(9, "0x0")}, 9, true},
		{"a half-synced mirror behind is skipped", []mirrorStatus{unseedable(4, "0x100000005"), st(5, "0x100000007")}, 5, true},
		{"a half-synced mirror ahead stops the takeover", []mirrorStatus{unseedable(4, "0x100000009"), st(5, "0x100000007")}, 5, false},
		{"none seedable", []mirrorStatus{unseedable(4, "0x100000009")}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, got := chooseSeeder(tt.statuses), int64(0)
			if i >= 0 {
				got = tt.statuses[i].MyID
			}
			if got != tt.want {
				t.Errorf("seeder %d, want %d", got, tt.want)
			}
			if err := checkSeeder(tt.statuses, i); (err == nil) != tt.safe {
				t.Errorf("checkSeeder: %v, want safe=%v", err, tt.safe)
			}
		})
	}
}

func TestCheckTakeoverConfig(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "snapshot.1"), []byte("x"), 0o644)
	other := filepath.Join(dir, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "myid"), []byte("5\n"), 0o644)
	mine := filepath.Join(dir, "mine")
	os.MkdirAll(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "myid"), []byte("4\n"), 0o644)
	lines := "server.4=127.0.0.1:2888:3888\nserver.5=127.0.0.2:2888:3888\n"
	tests := []struct {
		name, text, wantErr string
	}{
		{"missing data directory", "tickTime=2000\ndataDir=" + filepath.Join(dir, "new") + "\nclientPort=2181\n" + lines, ""},
		{"myid of this mirror", "dataDir=" + mine + "\nclientPort=2181\n" + lines, ""},
		{"standalone", "dataDir=" + filepath.Join(dir, "new") + "\nclientPort=2181\n", ""},
		{"no dataDir", "clientPort=2181\n" + lines, "sets no dataDir"},
		{"not listed", "dataDir=" + filepath.Join(dir, "new") + "\nserver.5=127.0.0.2:2888:3888\nserver.6=127.0.0.3:2888:3888\n", "is not listed"},
		{"data directory with state", "dataDir=" + full + "\n" + lines, "must be empty"},
		{"another member's myid", "dataDir=" + other + "\n" + lines, "names another server"},
		{"invalid", "dataDir=" + filepath.Join(dir, "new") + "\ntickTime=x\n", "tickTime"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("zoo%d.cfg", i))
			os.WriteFile(path, []byte(tt.text), 0o644)
			err := checkTakeoverConfig(path, 4)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// rawSession is a client connection opened by hand, so that it can resume
// a session by id and password as a client does when it moves to another
// server (go-zookeeper offers no way to start with a given session).
type rawSession struct {
	conn    net.Conn
	id      int64
	passwd  []byte
	timeout int32
	stop    chan struct{}
	wg      sync.WaitGroup
}

// connectRaw opens a session on addr (id 0) or resumes one. It returns
// the server's answer: a resume the server refuses as expired answers
// session id 0 (or closes the connection).
func connectRaw(addr string, id int64, passwd []byte, timeout int32, lastZxid int64) (*rawSession, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := jute.ConnectRequest{LastZxidSeen: lastZxid, TimeOut: timeout, SessionID: id, Passwd: passwd}
	if _, err := c.Write(jute.AppendFrame(nil, &req)); err != nil {
		c.Close()
		return nil, fmt.Errorf("write connect: %w", err)
	}
	br := bufio.NewReader(c)
	b, err := jute.ReadFrame(br, 1<<20, nil)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("read the connect response: %w", err)
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(b, &resp); err != nil {
		c.Close()
		return nil, fmt.Errorf("decode the connect response: %w", err)
	}
	c.SetDeadline(time.Time{})
	s := &rawSession{conn: c, id: resp.SessionID, passwd: resp.Passwd, timeout: resp.TimeOut, stop: make(chan struct{})}
	if s.id == 0 || s.timeout <= 0 {
		c.Close()
		return s, nil
	}
	s.wg.Add(2)
	go func() { // drain the replies
		defer s.wg.Done()
		for {
			if _, err := jute.ReadFrame(br, 1<<20, nil); err != nil {
				return
			}
		}
	}()
	go func() { // ping at a third of the timeout, as clients do
		defer s.wg.Done()
		tick := time.NewTicker(time.Duration(s.timeout) * time.Millisecond / 3)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				if _, err := c.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: -2, Type: jute.OpPing})); err != nil {
					return
				}
			}
		}
	}()
	return s, nil
}

// close drops the connection (the session lives on until it expires).
func (s *rawSession) close() {
	if s == nil || s.stop == nil {
		return
	}
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.conn.Close()
	s.wg.Wait()
}

// TestTakeoverMemberSessionClocks seeds a takeover member as a switch
// does, with two sessions that own an ephemeral each, and starts it: the
// session whose client resumes (id and password) keeps its ephemeral past
// its timeout, the other one gets a full timeout from the start and then
// expires by the leader's closeSession, which deletes its ephemeral; the
// zxids continue after the seeded one.
func TestTakeoverMemberSessionClocks(t *testing.T) {
	const (
		last                 = int64(0x300000010)
		resumed, idle        = int64(0x0100000000000011), int64(0x0200000000000022)
		resumedTO, idleTO    = int32(3000), int32(1500)
		resumedPath, idlePth = "/resumed", "/idle"
	)
	tree := datatree.New(datatree.Config{ExtendedTypesEnabled: true})
	for i, e := range []struct {
		path  string
		owner int64
	}{{resumedPath, resumed}, {idlePth, idle}, {"/persistent", 0}} {
		mode := jute.ModeEphemeral
		if e.owner == 0 {
			mode = jute.ModePersistent
		}
		res := tree.Apply(&datatree.Txn{Type: jute.OpCreate, SessionID: e.owner, Time: 1000,
			Request: &jute.CreateRequest{Path: e.path, Data: []byte(e.path), ACL: jute.OpenACLUnsafe, Flags: mode}}, last-3+int64(i), nil)
		if res.Err != jute.OK {
			t.Fatalf("create %s: %v", e.path, res.Err)
		}
	}
	sessions := session.NewTable()
	sessions.Add(resumed, resumedTO)
	sessions.Add(idle, idleTO)

	picker := ports.ForCmd()
	dir := t.TempDir()
	client := picker.Free(t)
	cfgPath := filepath.Join(dir, "takeover.cfg")
	cfg := fmt.Sprintf("tickTime=100\nminSessionTimeout=200\ndataDir=%s\nclientPort=%d\nstandaloneEnabled=false\nadmin.enableServer=false\nserver.4=127.0.0.1:%d:%d\n",
		filepath.Join(dir, "data"), client, picker.Free(t), picker.Free(t))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkTakeoverConfig(cfgPath, 4); err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	started := time.Now()
	srv, err := startTakeoverMember(context.Background(), cfgPath, 4, &replication.SeedInput{Tree: tree, Sessions: sessions, LastZxid: last}, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			t.Logf("member log:\n%s", log.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(client)
	rs, err := connectRaw(addr, resumed, session.Password(resumed), resumedTO, last)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.close()
	if rs.id != resumed || rs.timeout <= 0 {
		t.Fatalf("resume of session %#x: id %#x timeout %d, want the session back", resumed, rs.id, rs.timeout)
	}
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var gone time.Duration
	testutil.Eventually(t, 10*time.Second, "the idle session's ephemeral is deleted", func() bool {
		ok, _, err := conn.Exists(idlePth)
		if err == nil && !ok {
			gone = time.Since(started)
			return true
		}
		return false
	})
	if gone < time.Duration(idleTO)*time.Millisecond {
		t.Errorf("the idle session expired %s after the start, before its full timeout %d ms", gone, idleTO)
	}
	time.Sleep(time.Until(started.Add(time.Duration(resumedTO)*time.Millisecond + 500*time.Millisecond)))
	for _, p := range []string{resumedPath, "/persistent"} {
		if ok, _, err := conn.Exists(p); err != nil || !ok {
			t.Errorf("%s past the resumed session's timeout: exists %v, %v", p, ok, err)
		}
	}
	created, err := conn.Create("/after", nil, 0, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := conn.Exists(created)
	if err != nil || st == nil || uint64(st.Czxid) <= uint64(last) {
		t.Errorf("a write after the takeover: %+v %v, want a czxid above %#x", st, err, last)
	}
}

// fakeFreezer counts freezes and unfreezes; err fails Freeze.
type fakeFreezer struct {
	mu               sync.Mutex
	frozen, unfrozen int
	zxid             int64
	err              error
}

func (f *fakeFreezer) Freeze(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	f.frozen++
	return f.zxid, nil
}

func (f *fakeFreezer) Unfreeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unfrozen++
}

// TestTakeoverSteps drives a mirror's takeover endpoints through the
// steps allowed before the switch: each step answers the code of its
// phase, and a switch is refused while a "voter" (a listener standing
// for one) accepts connections, or without a takeover configuration.
func TestTakeoverSteps(t *testing.T) {
	voter, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer voter.Close()
	go func() {
		for {
			c, err := voter.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closed := "127.0.0.1:1" // nothing listens there
	view := zab.View{Servers: []zab.Server{{ID: 1, Addr: closed, ElectionAddr: voter.Addr().String()}, {ID: 4, Addr: closed, ElectionAddr: closed, Observer: true}}}
	fz := &fakeFreezer{zxid: 0x100000007}
	newMux := func(cfg string) (*takeover, *http.ServeMux) {
		tk := newTakeover(takeoverOptions{myid: 4, configPath: cfg, view: view, st: mirror.New(mirror.Options{}), freezer: fz, dialTimeout: time.Second})
		mux := http.NewServeMux()
		tk.routes(mux)
		return tk, mux
	}
	tk, mux := newMux("/nonexistent/takeover.cfg")
	steps := []struct {
		method, path string
		code         int
		phase        string
		body         string // a substring of the answer
	}{
		{"POST", "/takeover/switch?seed=true", http.StatusConflict, phaseMirroring, "cannot switch in phase mirroring"},
		{"POST", "/takeover/freeze", http.StatusOK, phaseFrozen, `"last_zxid":"0x100000007"`},
		{"POST", "/takeover/switch?seed=maybe", http.StatusBadRequest, phaseFrozen, "seed=true or seed=false"},
		{"POST", "/takeover/switch?seed=true", http.StatusConflict, phaseFrozen, "still accepts connections"},
		{"POST", "/takeover/unfreeze", http.StatusOK, phaseMirroring, `"phase":"mirroring"`},
		{"POST", "/takeover/freeze", http.StatusOK, phaseFrozen, `"phase":"frozen"`},
	}
	for _, s := range steps {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(s.method, s.path, nil))
		if rec.Code != s.code || tk.Phase() != s.phase || !strings.Contains(rec.Body.String(), s.body) {
			t.Fatalf("%s %s: %d %s in phase %s, want %d with %q in phase %s", s.method, s.path, rec.Code, rec.Body.String(), tk.Phase(), s.code, s.body, s.phase)
		}
	}
	if fz.frozen != 2 || fz.unfrozen != 1 {
		t.Errorf("freezer: %d freezes and %d unfreezes, want 2 and 1", fz.frozen, fz.unfrozen)
	}
	if st := tk.status(context.Background()); !st.ZooKeeperReachable || st.Phase != phaseFrozen {
		t.Errorf("status %+v, want frozen and ZooKeeper reachable", st)
	}
	voter.Close()
	if tk.ZooKeeperReachable(context.Background()) {
		t.Error("ZooKeeper reachable with no voter listening")
	}
	// The voters are gone, but this mirror never finished a sync: it
	// cannot seed, and stays frozen (before the point of no return).
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/takeover/switch?seed=true", nil))
	if rec.Code != http.StatusConflict || tk.Phase() != phaseFrozen || !strings.Contains(rec.Body.String(), "did not finish") {
		t.Errorf("seeding from an unfinished sync: %d %s in phase %s, want 409 and frozen", rec.Code, rec.Body.String(), tk.Phase())
	}

	// A failed freeze leaves the mirror mirroring and releases the writes.
	fz.err = errors.New("no leader")
	tk, mux = newMux("/nonexistent/takeover.cfg")
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/takeover/freeze", nil))
	if rec.Code != http.StatusInternalServerError || tk.Phase() != phaseMirroring || fz.unfrozen != 2 {
		t.Errorf("failed freeze: %d %s, phase %s, %d unfreezes", rec.Code, rec.Body.String(), tk.Phase(), fz.unfrozen)
	}
	// Without --takeover-config a switch is refused.
	_, mux = newMux("")
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/takeover/switch?seed=false", nil))
	if rec.Code != http.StatusPreconditionFailed {
		t.Errorf("switch without a takeover configuration: %d %s, want 412", rec.Code, rec.Body.String())
	}
}

// TestAwaitZooKeeperStoppedTimesOutAsReachable: when the wait for the
// voters to stop runs out, the command says the voters are still
// reachable, also when the deadline falls in the middle of a mirror's
// status read (a slow mirror, or a loaded machine).
func TestAwaitZooKeeperStoppedTimesOutAsReachable(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(150 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"myid": 4, "phase": "frozen", "zookeeper_reachable": true}`))
	}))
	defer slow.Close()
	r := &takeoverRun{f: takeoverFlags{timeout: 400 * time.Millisecond, poll: time.Millisecond},
		out: io.Discard, mirrors: []mirrorClient{newMirrorClient(slow.URL)}}
	for i := range 5 { // the deadline lands in a read or between two
		_, err := r.awaitZooKeeperStopped(context.Background())
		if err == nil || !strings.Contains(err.Error(), "still reachable from mirrors [4]") {
			t.Fatalf("try %d: %v, want voters still reachable from mirror 4", i+1, err)
		}
	}
}
