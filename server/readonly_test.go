package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/test/ports"
)

// loneMember starts member 1 of a three-member ensemble whose other
// members are not running yet, with readonlymode.enabled, so it has no
// quorum. It returns the member and a function that starts the others.
func loneMember(t *testing.T) (*Server, func()) {
	t.Helper()
	e := testutil.NewEnsemble(t, testutil.EnsembleSpec[*Server]{Size: 3, Ports: ports.ForServer(),
		Base: func(int) conf.Config {
			cfg := opsConfig(t)
			cfg.TickTime = 100
			cfg.ReadOnlyModeEnabled = true
			return cfg
		},
		New: func(_ int, cfg conf.Config) (*Server, error) {
			return New(Options{Config: cfg, Logger: testutil.Logger(t, slog.LevelWarn)})
		}})
	e.Start(0)
	return e.Member(0), func() { e.Start(1); e.Start(2) }
}

// wireClient speaks the client protocol to a server frame by frame.
type wireClient struct {
	t   *testing.T
	c   net.Conn
	br  *bufio.Reader
	xid int32
}

// dialWire connects and sends req; it returns the decoded ConnectResponse,
// or an error when the server closed the connection instead.
func dialWire(t *testing.T, s *Server, req jute.ConnectRequest) (*wireClient, jute.ConnectResponse, error) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	w := &wireClient{t: t, c: nc, br: bufio.NewReader(nc)}
	if req.Passwd == nil {
		req.Passwd = make([]byte, 16)
	}
	w.send(&req)
	var resp jute.ConnectResponse
	frame, err := w.read()
	if err != nil {
		return w, resp, err
	}
	return w, resp, jute.Decode(frame, &resp)
}

func (w *wireClient) send(recs ...jute.Record) {
	w.t.Helper()
	w.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := w.c.Write(jute.AppendFrame(nil, recs...)); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

func (w *wireClient) read() ([]byte, error) {
	w.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return jute.ReadFrame(w.br, 1<<20, nil)
}

// call sends a request (a header alone when req is nil) and returns the
// reply header.
func (w *wireClient) call(op jute.OpCode, req jute.Record) jute.ReplyHeader {
	w.t.Helper()
	w.xid++
	h := jute.RequestHeader{Xid: w.xid, Type: op}
	if op == jute.OpPing {
		h.Xid = jute.XidPing
	}
	if req == nil {
		w.send(&h)
	} else {
		w.send(&h, req)
	}
	frame, err := w.read()
	if err != nil {
		w.t.Fatalf("%v: read reply: %v", op, err)
	}
	var rh jute.ReplyHeader
	rh.Decode(jute.NewDecoder(frame))
	return rh
}

// closedWithin reports whether the server closes the connection within d
// without sending anything more.
func (w *wireClient) closedWithin(d time.Duration) bool {
	w.c.SetReadDeadline(time.Now().Add(d))
	_, err := jute.ReadFrame(w.br, 1<<20, nil)
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		(err != nil && strings.Contains(err.Error(), "connection reset"))
}

// roRequest is a read-only session's connect request.
func roRequest(timeout int32) jute.ConnectRequest {
	return jute.ConnectRequest{TimeOut: timeout, ReadOnly: true, HasReadOnly: true}
}

// TestReadOnlyMode drives a member without a quorum: it serves nobody
// during the grace period, then read-only clients, with ZooKeeper's
// handshake rules, refusals and reports, and closes them all once the
// other members come and it is in a quorum.
func TestReadOnlyMode(t *testing.T) {
	s, startOthers := loneMember(t)
	if s.Serving() || s.ReadOnly() {
		t.Fatalf("serving (%v) or read-only (%v) during the grace period", s.Serving(), s.ReadOnly())
	}
	testutil.Eventually(t, 10*time.Second, "read-only mode", s.readOnly)
	t.Run("handshake", func(t *testing.T) { testReadOnlyHandshake(t, s) })
	t.Run("requests", func(t *testing.T) { testReadOnlyRequests(t, s) })
	t.Run("expiry", func(t *testing.T) { testReadOnlyExpiry(t, s) })
	t.Run("reports", func(t *testing.T) { testReadOnlyReports(t, s) })

	ro, _, err := dialWire(t, s, roRequest(2000))
	if err != nil {
		t.Fatalf("read-only handshake: %v", err)
	}
	startOthers()
	if !ro.closedWithin(20 * time.Second) {
		t.Fatal("read-only connection still open once in a quorum")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.Mode(); got == "read-only" || !s.Serving() || s.readOnly() {
		t.Fatalf("in a quorum: Mode %q, Serving %v, readOnly %v; want read-write", got, s.Serving(), s.readOnly())
	}
	if s.localSessionCount() != 0 {
		t.Fatalf("%d local sessions left after read-only mode", s.localSessionCount())
	}
	rw, resp, err := dialWire(t, s, jute.ConnectRequest{TimeOut: 2000, HasReadOnly: true})
	if err != nil || resp.ReadOnly || resp.SessionID == 0 {
		t.Fatalf("read-write handshake: %+v %v", resp, err)
	}
	if h := rw.call(jute.OpCreate, &jute.CreateRequest{Path: "/rw", ACL: jute.OpenACLUnsafe}); h.Err != jute.OK {
		t.Fatalf("create in a quorum: %v", h.Err)
	}
}

func testReadOnlyHandshake(t *testing.T, s *Server) {
	local, first, err := dialWire(t, s, roRequest(2000))
	if err != nil {
		t.Fatal(err)
	}
	const unknown = int64(0x7f00000000000042)
	cases := []struct {
		name    string
		req     jute.ConnectRequest
		closed  bool  // closed without a response
		wantSID int64 // -1: a new id
		expired bool  // the zeroed response, then closed
	}{
		{"new session", roRequest(2000), false, -1, false},
		{"no readOnly flag", jute.ConnectRequest{TimeOut: 2000, HasReadOnly: true}, true, 0, false},
		{"client without the readOnly byte", jute.ConnectRequest{TimeOut: 2000}, true, 0, false},
		{"client has seen a newer zxid", jute.ConnectRequest{TimeOut: 2000, ReadOnly: true, HasReadOnly: true, LastZxidSeen: 1 << 40}, true, 0, false},
		{"local session resumed", jute.ConnectRequest{TimeOut: 2000, ReadOnly: true, HasReadOnly: true,
			SessionID: first.SessionID, Passwd: first.Passwd}, false, first.SessionID, false},
		{"unknown session adopted", jute.ConnectRequest{TimeOut: 2000, ReadOnly: true, HasReadOnly: true,
			SessionID: unknown, Passwd: session.Password(unknown)}, false, unknown, false},
		{"wrong password", jute.ConnectRequest{TimeOut: 2000, ReadOnly: true, HasReadOnly: true,
			SessionID: unknown + 1}, false, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, resp, err := dialWire(t, s, tc.req)
			switch {
			case tc.closed:
				if err == nil {
					t.Fatalf("answered %+v, want the connection closed", resp)
				}
			case err != nil:
				t.Fatalf("handshake: %v", err)
			case !resp.ReadOnly:
				t.Fatalf("response without readOnly: %+v", resp)
			case tc.expired:
				if resp.SessionID != 0 || resp.TimeOut != 0 || !w.closedWithin(2*time.Second) {
					t.Fatalf("response %+v, want the zeroed one and a close", resp)
				}
			case tc.wantSID == -1 && (resp.SessionID == 0 || resp.SessionID == first.SessionID),
				tc.wantSID != -1 && resp.SessionID != tc.wantSID,
				resp.TimeOut != 2000:
				t.Fatalf("response %+v, want session %x", resp, tc.wantSID)
			default:
				if h := w.call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}); h.Err != jute.OK {
					t.Fatalf("exists on the new session: %v", h.Err)
				}
			}
		})
	}
	if !local.closedWithin(2 * time.Second) {
		t.Error("the first connection of the resumed local session is still open")
	}
}

func testReadOnlyRequests(t *testing.T, s *Server) {
	w, _, err := dialWire(t, s, roRequest(2000))
	if err != nil {
		t.Fatal(err)
	}
	zxid := s.node.LastZxid()
	cases := []struct {
		op   jute.OpCode
		req  jute.Record // nil: the header alone, which must not matter
		want jute.Code
	}{
		{jute.OpCreate, nil, jute.NotReadOnly},
		{jute.OpCreate2, nil, jute.NotReadOnly},
		{jute.OpCreateTTL, nil, jute.NotReadOnly},
		{jute.OpCreateContainer, nil, jute.NotReadOnly},
		{jute.OpDelete, nil, jute.NotReadOnly},
		{jute.OpSetData, &jute.SetDataRequest{Path: "/", Version: -1}, jute.NotReadOnly},
		{jute.OpSetACL, nil, jute.NotReadOnly},
		{jute.OpCheck, nil, jute.NotReadOnly},
		{jute.OpMulti, nil, jute.NotReadOnly},
		{jute.OpReconfig, nil, jute.NotReadOnly},
		{jute.OpSync, &jute.PathRequest{Path: "/"}, jute.NotReadOnly},
		{jute.OpPing, nil, jute.OK},
		{jute.OpGetData, &jute.PathWatchRequest{Path: "/zookeeper", Watch: true}, jute.OK},
		{jute.OpExists, &jute.PathWatchRequest{Path: "/missing", Watch: true}, jute.NoNode},
		{jute.OpGetChildren2, &jute.PathWatchRequest{Path: "/"}, jute.OK},
		{jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: "/"}, jute.OK},
		{jute.OpGetACL, &jute.PathRequest{Path: "/"}, jute.OK},
		{jute.OpWhoAmI, nil, jute.OK},
		{jute.OpMultiRead, &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpGetData, Request: &jute.PathWatchRequest{Path: "/"}}}}, jute.OK},
	}
	for _, tc := range cases {
		h := w.call(tc.op, tc.req)
		if h.Err != tc.want || h.Zxid != zxid {
			t.Errorf("%v: %v zxid 0x%x, want %v zxid 0x%x", tc.op, h.Err, h.Zxid, tc.want, zxid)
		}
	}
	before := s.localSessionCount()
	if h := w.call(jute.OpCloseSession, nil); h.Err != jute.OK {
		t.Errorf("closeSession: %v", h.Err)
	}
	if !w.closedWithin(2 * time.Second) {
		t.Error("connection open after closeSession")
	}
	if after := s.localSessionCount(); after != before-1 {
		t.Errorf("local sessions %d after closeSession, want %d", after, before-1)
	}
}

// testReadOnlyExpiry: a local session that goes silent expires here by its
// timeout, and its connection is closed.
func testReadOnlyExpiry(t *testing.T, s *Server) {
	w, resp, err := dialWire(t, s, roRequest(200))
	if err != nil || resp.TimeOut != 200 {
		t.Fatalf("handshake: %+v %v", resp, err)
	}
	if !w.closedWithin(3 * time.Second) {
		t.Fatal("silent local session not expired within 3 s")
	}
	testutil.Eventually(t, 2*time.Second, "the expired session gone", func() bool {
		found := true
		s.localSessions(func(tr *session.Tracker) { _, found = tr.Expiry(resp.SessionID) })
		return !found
	})
}

// testReadOnlyReports: the view the operator surfaces read says read-only
// (their texts: server/ops TestReadOnlyReports, test/readonly_test.go).
func testReadOnlyReports(t *testing.T, s *Server) {
	if _, _, err := dialWire(t, s, roRequest(2000)); err != nil {
		t.Fatal(err)
	}
	if !s.ReadOnly() || s.Mode() != "read-only" || s.Serving() {
		t.Errorf("ReadOnly %v, Mode %q, Serving %v; want true, read-only, false", s.ReadOnly(), s.Mode(), s.Serving())
	}
	if n := s.LocalSessionCount(); n == 0 {
		t.Error("no local session counted")
	}
}
