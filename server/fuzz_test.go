package server_test

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
)

// FuzzServer feeds a real in-process server a session's worth of hostile
// frames: the first request is built from the fuzzed xid, opcode and body,
// tail follows as raw bytes (more frames, or garbage). Each input passes
// when the server answered without a contained panic (connection_panics
// stays 0), ended the connection once the client stopped writing, and a
// well-behaved go-zookeeper client can still create and read a znode. One
// server serves every input of a fuzz process; each input costs one
// connection (resuming the same session when it still exists) and two
// writes of the well-behaved client.
func FuzzServer(f *testing.F) {
	for _, p := range seedRequests(f) {
		f.Add(int32(binary.BigEndian.Uint32(p)), int32(binary.BigEndian.Uint32(p[4:])), p[8:], []byte(nil))
	}
	// The multi that mixed a read into a write multi (issue 27), and a
	// pipelined follow-up frame.
	create := jute.Encode(&jute.CreateRequest{Path: "/f", ACL: jute.OpenACLUnsafe})
	mixed := jute.Encode(&jute.MultiRequest{Ops: []jute.MultiOp{
		{Type: jute.OpCreate, Request: &jute.CreateRequest{Path: "/f", ACL: jute.OpenACLUnsafe}},
		{Type: jute.OpGetData, Request: &jute.PathWatchRequest{Path: "/f"}}}})
	next := append(jute.Encode(&jute.RequestHeader{Xid: 2, Type: jute.OpCreate}), create...)
	f.Add(int32(1), int32(jute.OpMulti), mixed, append(binary.BigEndian.AppendUint32(nil, uint32(len(next))), next...))
	f.Add(int32(1), int32(jute.OpMultiRead), mixed, []byte(nil))

	cfg := testutil.Config(f.TempDir())
	cfg.ExtendedTypesEnabled = true
	cfg.ForceSync = false // inputs, not their durability, are under test
	srv := servertest.Start(f, server.Options{Config: cfg})
	addr := srv.Addr().String()
	client, _ := testutil.Connect(f, addr, 10*time.Second)
	var sess sessionCreds
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, xid, op int32, body, tail []byte) {
		payload := append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(xid)), uint32(op)), body...)
		frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
		sendHostile(t, addr, &sess, append(frame, tail...))
		if p := connectionPanics(srv); p != 0 {
			t.Fatalf("%v panics contained while serving the input (see the log)", p)
		}
		checkCreateAndRead(t, client, fmt.Sprintf("/fuzz-%d", n.Add(1)))
	})
}

// seedRequests reads testdata/fuzz_requests.txt: request payloads from the
// golden ZooKeeper captures.
func seedRequests(f *testing.F) [][]byte {
	b, err := os.ReadFile("testdata/fuzz_requests.txt")
	if err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p, err := hex.DecodeString(line)
		if err != nil || len(p) < 8 {
			f.Fatalf("bad seed line %q: %v", line, err)
		}
		out = append(out, p)
	}
	return out
}

// sessionCreds is the session the fuzz inputs share while it lives.
type sessionCreds struct {
	id     int64
	passwd []byte
}

// sendHostile connects (resuming sess when it still exists, else creating
// a session), writes stream, closes its sending side and reads until the
// server ends the connection, which it must do within five seconds.
func sendHostile(t *testing.T, addr string, sess *sessionCreds, stream []byte) {
	c, br := dialSession(t, addr, sess)
	defer c.Close()
	if _, err := c.Write(stream); err != nil {
		return // the server may close on a bad frame while we write
	}
	c.(*net.TCPConn).CloseWrite()
	for {
		if _, err := jute.ReadFrame(br, 64<<20, nil); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("connection still open 5 s after the client stopped writing")
			}
			return
		}
	}
}

// dialSession connects with sess, or with a new session when sess has
// ended (an input may close it), and leaves a 5 s deadline on the
// connection.
func dialSession(t *testing.T, addr string, sess *sessionCreds) (net.Conn, *bufio.Reader) {
	for range 2 {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		if handshake(t, c, br, sess) {
			return c, br
		}
		c.Close()
		*sess = sessionCreds{}
	}
	t.Fatal("no session")
	return nil, nil
}

// handshake resumes sess (or creates a session when sess is empty) on c
// and reports whether the server accepted it; a refused resume closes c.
func handshake(t *testing.T, c net.Conn, br *bufio.Reader, sess *sessionCreds) bool {
	passwd := sess.passwd
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	req := jute.ConnectRequest{TimeOut: 30000, SessionID: sess.id, Passwd: passwd}
	if _, err := c.Write(jute.AppendFrame(nil, &req)); err != nil {
		t.Fatalf("write connect: %v", err)
	}
	b, err := jute.ReadFrame(br, 1<<20, nil)
	if err != nil {
		return false
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(b, &resp); err != nil {
		t.Fatalf("connect response: %v", err)
	}
	if resp.SessionID == 0 {
		return false
	}
	sess.id, sess.passwd = resp.SessionID, resp.Passwd
	return true
}

// checkCreateAndRead creates path with some data, reads it back and
// deletes it again.
func checkCreateAndRead(t *testing.T, c *zk.Conn, path string) {
	if _, err := c.Create(path, []byte("alive"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("well-behaved create %s: %v", path, err)
	}
	data, _, err := c.Get(path)
	if err != nil || string(data) != "alive" {
		t.Fatalf("well-behaved get %s: %q %v", path, data, err)
	}
	if err := c.Delete(path, -1); err != nil {
		t.Fatalf("well-behaved delete %s: %v", path, err)
	}
}

// connectionPanics reads the server's connection_panics counter (mntr and
// /metrics show it).
func connectionPanics(srv *server.Server) float64 {
	return float64(srv.Stats().ConnectionPanics)
}
