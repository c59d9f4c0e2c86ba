package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

// panickyHandler is a log handler that panics on the reader's
// "undecodable request" line, standing in for a bug in code a client's
// request reaches. Everything else is dropped.
type panickyHandler struct{}

func (panickyHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h panickyHandler) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h panickyHandler) WithGroup(string) slog.Handler          { return h }

func (panickyHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "undecodable request" {
		panic("injected reader panic")
	}
	return nil
}

// panickyAudit is an Operator whose audit log panics on a write to /boom,
// which the completer hands it.
type panickyAudit struct{ noOperator }

func (panickyAudit) Audit(r AuditRecord) {
	if req, ok := r.Request.(*jute.CreateRequest); ok && req.Path == "/boom" {
		panic("injected completer panic")
	}
}

// rawSession opens a connection with a new session, or resumes sid with
// passwd when sid != 0; it returns the connection and the ConnectResponse.
func rawSession(t *testing.T, s *Server, sid int64, passwd []byte) (net.Conn, *bufio.Reader, jute.ConnectResponse) {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	c.Write(jute.AppendFrame(nil, &jute.ConnectRequest{TimeOut: 30000, SessionID: sid, Passwd: passwd}))
	br := bufio.NewReader(c)
	b, err := jute.ReadFrame(br, 1<<20, nil)
	var resp jute.ConnectResponse
	if err == nil {
		err = jute.Decode(b, &resp)
	}
	if err != nil || resp.SessionID == 0 {
		t.Fatalf("session not established: %+v %v", resp, err)
	}
	return c, br, resp
}

// expectClosedWithoutReply asserts the server closes c without a frame.
func expectClosedWithoutReply(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	b, err := jute.ReadFrame(br, 1<<20, nil)
	if err == nil {
		t.Fatalf("got a %d-byte frame, want the connection closed", len(b))
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("connection still open after the panic")
	}
}

// TestPanicIsContainedToItsConnection: a panic on a connection's reader
// and on its completer each close that connection only; they are counted
// (mntr's zk_connection_panics), the session survives, and another client is served throughout.
func TestPanicIsContainedToItsConnection(t *testing.T) {
	cfg := opsConfig(t)
	cfg.AuditEnable = true
	s := startOpsServer(t, Options{Config: cfg, Logger: slog.New(panickyHandler{}), Operator: panickyAudit{}})
	good := opsClient(t, s)
	if _, err := good.Create("/ok", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		frame []byte
	}{
		// A truncated getData: the reader logs "undecodable request".
		{"reader", func() []byte {
			f := jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpGetData})
			f = append(f, 0, 0, 0, 9, '/')
			binary.BigEndian.PutUint32(f, uint32(len(f)-4))
			return f
		}()},
		// A create of /boom: the completer writes its audit line.
		{"completer", jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpCreate},
			&jute.CreateRequest{Path: "/boom", ACL: jute.OpenACLUnsafe})},
	}
	for i, step := range steps {
		c, br, resp := rawSession(t, s, 0, nil)
		c.Write(step.frame)
		expectClosedWithoutReply(t, c, br)
		if got, want := s.stats.connPanics.Load(), int64(i+1); got != want {
			t.Fatalf("%s: connection_panics = %d, want %d", step.name, got, want)
		}
		if data, _, err := good.Get("/ok"); err != nil || string(data) != "x" {
			t.Fatalf("%s: other client not served: %q %v", step.name, data, err)
		}
		rawSession(t, s, resp.SessionID, resp.Passwd) // fails the test if the session is gone
	}
	if got := s.Stats().ConnectionPanics; got != 2 {
		t.Fatalf("Stats().ConnectionPanics = %d, want 2", got)
	}
	// The other client's pings come and go; the panicked requests must not
	// stay counted.
	testutil.Eventually(t, 5*time.Second, "no outstanding requests after the panics", func() bool {
		return s.stats.outstanding.Load() == 0
	})
}
