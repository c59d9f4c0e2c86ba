package test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

// readOnlyMode turns readonlymode.enabled on.
func readOnlyMode(cfg *conf.Config) { cfg.ReadOnlyModeEnabled = true }

// roHandshake connects a raw client to addr with the readOnly flag set (or
// not), resuming sid when it is not zero.
func roHandshake(t *testing.T, addr string, readOnly bool, sid int64, passwd []byte) (*rawClient, jute.ConnectResponse, error) {
	t.Helper()
	r := dialRaw(t, addr)
	resp, err := r.handshake(jute.ConnectRequest{TimeOut: 6000, SessionID: sid, Passwd: passwd,
		ReadOnly: readOnly, HasReadOnly: true})
	return r, resp, err
}

// adminReadOnly asks a member's AdminServer is_read_only.
func adminReadOnly(t *testing.T, e *ensemble, i int) bool {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + e.Member(i).ops.AdminAddr().String() + "/commands/is_read_only")
	if err != nil {
		t.Fatalf("is_read_only: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		ReadOnly *bool  `json:"read_only"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.ReadOnly == nil {
		t.Fatalf("is_read_only: %v in %s", err, body)
	}
	return *out.ReadOnly
}

// TestReadOnlyModeIsolatedMember: a member (a follower, or the leader,
// which first has to step down) cut off from its quorum with
// readonlymode.enabled serves read-only clients from its last state, and
// closes them once it is back in the quorum.
func TestReadOnlyModeIsolatedMember(t *testing.T) {
	for _, tc := range []struct {
		name string
		pick func(leader int) int
	}{
		{"follower", func(leader int) int { return (leader + 1) % 3 }},
		{"leader", func(leader int) int { return leader }},
	} {
		t.Run(tc.name, func(t *testing.T) { testReadOnlyIsolation(t, tc.pick) })
	}
}

func testReadOnlyIsolation(t *testing.T, pick func(leader int) int) {
	e, links := proxiedEnsemble(t, 3, readOnlyMode)
	m := pick(e.Leader())
	addr := e.Addr(m)

	// A global session on m, which also writes the state to read later.
	global := dialRaw(t, addr)
	gresp, err := global.handshake(jute.ConnectRequest{TimeOut: 6000, HasReadOnly: true})
	if err != nil || gresp.SessionID == 0 || gresp.ReadOnly {
		t.Fatalf("read-write handshake: %+v, %v", gresp, err)
	}
	h, _ := global.call(jute.OpCreate, &jute.CreateRequest{Path: "/ro", Data: []byte("before"), ACL: jute.OpenACLUnsafe})
	if h.Err != jute.OK {
		t.Fatalf("create /ro: %v", h.Err)
	}
	lastZxid := h.Zxid
	global.c.Close()
	if got := testutil.FourLetterLine(addr, "isro", ""); got != "rw" {
		t.Fatalf("isro in a quorum = %q, want rw", got)
	}

	isolate(links, m, true)
	testutil.Eventually(t, 20*time.Second, "isro answering ro", func() bool {
		out, _ := testutil.FourLetter(addr, "isro")
		return out == "ro"
	})
	if mode := testutil.FourLetterLine(addr, "srvr", "Mode: "); mode != "read-only" {
		t.Errorf("srvr Mode = %q, want read-only", mode)
	}
	if st := testutil.FourLetterLine(addr, "mntr", "zk_server_state\t"); st != "read-only" {
		t.Errorf("mntr zk_server_state = %q, want read-only", st)
	}
	if ps := testutil.FourLetterLine(addr, "mntr", "zk_peer_state\t"); ps != "" {
		t.Errorf("mntr zk_peer_state = %q on the read-only server, want none", ps)
	}
	if !adminReadOnly(t, e, m) {
		t.Error("AdminServer is_read_only = false, want true")
	}

	ro, resp, err := roHandshake(t, addr, true, 0, nil)
	if err != nil || resp.SessionID == 0 || !resp.ReadOnly || resp.TimeOut != 6000 {
		t.Fatalf("read-only handshake: %+v, %v", resp, err)
	}
	checkReadOnlySession(t, ro, lastZxid)

	refusals := []struct {
		name     string
		readOnly bool
		sid      int64
		passwd   []byte
	}{
		{"no readOnly flag", false, 0, nil},
		{"global session", true, gresp.SessionID, gresp.Passwd},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r, resp, err := roHandshake(t, addr, tc.readOnly, tc.sid, tc.passwd)
			if err == nil {
				t.Fatalf("handshake answered %+v, want the connection closed", resp)
			}
			r.expectClosed(2 * time.Second)
		})
	}

	isolate(links, m, false)
	ro.expectClosed(30 * time.Second)
	testutil.Eventually(t, 20*time.Second, "isro answering rw", func() bool {
		out, _ := testutil.FourLetter(addr, "isro")
		return out == "rw"
	})
	if adminReadOnly(t, e, m) {
		t.Error("AdminServer is_read_only = true after the heal")
	}
	c, _ := testutil.Connect(t, addr, 4*time.Second)
	if _, err := c.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("write after the heal: %v", err)
	}
}

// checkReadOnlySession reads through a read-only session and checks that
// every state change is refused with NotReadOnly and the last zxid.
func checkReadOnlySession(t *testing.T, ro *rawClient, lastZxid int64) {
	t.Helper()
	h, body := ro.call(jute.OpGetData, &jute.PathWatchRequest{Path: "/ro", Watch: true})
	var data jute.GetDataResponse
	if h.Err != jute.OK || jute.Decode(body, &data) != nil || string(data.Data) != "before" {
		t.Fatalf("getData /ro: %v %q", h.Err, data.Data)
	}
	if h.Zxid < lastZxid {
		t.Fatalf("getData zxid 0x%x, want at least 0x%x", h.Zxid, lastZxid)
	}
	zxid := h.Zxid
	writes := []struct {
		op  jute.OpCode
		req jute.Record
	}{
		{jute.OpCreate, &jute.CreateRequest{Path: "/w", ACL: jute.OpenACLUnsafe}},
		{jute.OpSetData, &jute.SetDataRequest{Path: "/ro", Data: []byte("x"), Version: -1}},
		{jute.OpDelete, &jute.DeleteRequest{Path: "/ro", Version: -1}},
		{jute.OpSync, &jute.PathRequest{Path: "/ro"}},
		{jute.OpMulti, &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpDelete, Request: &jute.DeleteRequest{Path: "/ro", Version: -1}}}}},
	}
	for _, w := range writes {
		h, _ := ro.call(w.op, w.req)
		if h.Err != jute.NotReadOnly || h.Zxid != zxid {
			t.Errorf("%v on the read-only server: %v zxid 0x%x, want NotReadOnly zxid 0x%x", w.op, h.Err, h.Zxid, zxid)
		}
	}
	h, _ = ro.call(jute.OpExists, &jute.PathWatchRequest{Path: "/ro"})
	if h.Err != jute.OK {
		t.Errorf("exists /ro after the refused writes: %v", h.Err)
	}
}

// TestReadOnlyModeOffIsolatedMember: without readonlymode.enabled an
// isolated member serves nobody, and isro answers null.
func TestReadOnlyModeOffIsolatedMember(t *testing.T) {
	e, links := proxiedEnsemble(t, 3)
	m := (e.Leader() + 1) % 3
	addr := e.Addr(m)
	isolate(links, m, true)
	testutil.Eventually(t, 20*time.Second, "isro answering null", func() bool {
		out, _ := testutil.FourLetter(addr, "isro")
		return out == "null"
	})
	// Past ZooKeeper's read-only grace period (two seconds) it still serves
	// nobody.
	time.Sleep(2500 * time.Millisecond)
	if out, _ := testutil.FourLetter(addr, "isro"); out != "null" {
		t.Fatalf("isro = %q, want null", out)
	}
	for _, readOnly := range []bool{true, false} {
		r, resp, err := roHandshake(t, addr, readOnly, 0, nil)
		if err == nil {
			t.Fatalf("readOnly=%v handshake answered %+v, want the connection closed", readOnly, resp)
		}
		r.expectClosed(2 * time.Second)
	}
}
