package test

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

func TestConnectResponseMirrorsReadOnlyByte(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	for _, withByte := range []bool{false, true} {
		raw := dialRaw(t, srv.Addr().String())
		raw.send(&jute.ConnectRequest{TimeOut: 1, Passwd: make([]byte, 16), HasReadOnly: withByte})
		b, err := raw.readFrame(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		want := 36
		if withByte {
			want = 37
		}
		if len(b) != want {
			t.Fatalf("readOnly byte %v: response is %d bytes, want %d", withByte, len(b), want)
		}
		var resp jute.ConnectResponse
		jute.Decode(b, &resp)
		if resp.TimeOut != 200 { // requested 1ms, clamped to 2 x tickTime
			t.Fatalf("negotiated timeout %d, want the minimum 200", resp.TimeOut)
		}
	}
}

func TestBadInputKeepsServerServing(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	addr := srv.Addr().String()

	t.Run("unknown opcode: Unimplemented with zxid -1, then close", func(t *testing.T) {
		raw := dialRaw(t, addr)
		raw.handshake(jute.ConnectRequest{TimeOut: 4000})
		raw.send(&jute.RequestHeader{Xid: 7, Type: 99})
		b, err := raw.readFrame(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var h jute.ReplyHeader
		jute.Decode(b, &h)
		if h != (jute.ReplyHeader{Xid: 7, Zxid: -1, Err: jute.Unimplemented}) {
			t.Fatalf("reply %+v", h)
		}
		raw.expectClosed(2 * time.Second)
	})
	t.Run("truncated body: MarshallingError, connection stays", func(t *testing.T) {
		raw := dialRaw(t, addr)
		raw.handshake(jute.ConnectRequest{TimeOut: 4000})
		frame := jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpGetData})
		frame = append(frame, 0, 0, 0, 9, '/') // path length 9, one byte
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		raw.c.Write(frame)
		b, err := raw.readFrame(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var h jute.ReplyHeader
		jute.Decode(b, &h)
		if h.Xid != 1 || h.Err != jute.MarshallingError {
			t.Fatalf("reply %+v", h)
		}
		if h, _ := raw.call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}); h.Err != jute.OK {
			t.Fatalf("connection unusable after a bad request: %v", h.Err)
		}
	})
	t.Run("oversized frame: closed without reply, session survives", func(t *testing.T) {
		raw := dialRaw(t, addr)
		resp, _ := raw.handshake(jute.ConnectRequest{TimeOut: 4000})
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], jute.DefaultMaxBuffer+1)
		raw.c.Write(hdr[:])
		raw.expectClosed(2 * time.Second)
		again := dialRaw(t, addr)
		r, err := again.handshake(jute.ConnectRequest{SessionID: resp.SessionID, Passwd: resp.Passwd, TimeOut: 4000})
		if err != nil || r.SessionID != resp.SessionID {
			t.Fatalf("session lost after an oversized frame: %+v %v", r, err)
		}
	})
	t.Run("largest frame is accepted, one byte more is not", func(t *testing.T) {
		raw := dialRaw(t, addr)
		raw.handshake(jute.ConnectRequest{TimeOut: 4000})
		raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/big", ACL: jute.OpenACLUnsafe})
		// setData payload = 8 (header) + 4+len(path) + 4+len(data) + 4 (version)
		data := make([]byte, jute.DefaultMaxBuffer-20-len("/big"))
		if h, _ := raw.call(jute.OpSetData, &jute.SetDataRequest{Path: "/big", Data: data, Version: -1}); h.Err != jute.OK {
			t.Fatalf("setData with a maximal frame: %v", h.Err)
		}
		// The server may close while the frame is still being written:
		// the write can fail with a reset, and that is a pass too.
		raw.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		raw.c.Write(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 99, Type: jute.OpSetData},
			&jute.SetDataRequest{Path: "/big", Data: append(data, 0), Version: -1}))
		raw.expectClosed(2 * time.Second)
	})
	t.Run("invalid paths: BadArguments", func(t *testing.T) {
		raw := dialRaw(t, addr)
		raw.handshake(jute.ConnectRequest{TimeOut: 4000})
		for _, p := range []string{"/a//b/..", "/x/.", "/tab\there", "/\U0001F600"} {
			h, _ := raw.call(jute.OpSetData, &jute.SetDataRequest{Path: p, Version: -1})
			if h.Err != jute.BadArguments {
				t.Errorf("setData %q: %v, want BadArguments", p, h.Err)
			}
		}
	})
	t.Run("garbage before the handshake: closed", func(t *testing.T) {
		raw := dialRaw(t, addr)
		raw.send(&jute.RequestHeader{Xid: 1, Type: jute.OpGetData}, &jute.PathWatchRequest{Path: "/"})
		raw.expectClosed(2 * time.Second)
	})
	t.Run("client ahead of the server: closed without reply", func(t *testing.T) {
		raw := dialRaw(t, addr)
		raw.send(&jute.ConnectRequest{TimeOut: 4000, LastZxidSeen: 1 << 40, Passwd: make([]byte, 16)})
		raw.expectClosed(2 * time.Second)
	})
	t.Run("ping reply always has xid -2", func(t *testing.T) {
		raw := dialRaw(t, addr)
		raw.handshake(jute.ConnectRequest{TimeOut: 4000})
		raw.send(&jute.RequestHeader{Xid: 55, Type: jute.OpPing})
		b, err := raw.readFrame(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var h jute.ReplyHeader
		jute.Decode(b, &h)
		if h.Xid != jute.XidPing || h.Err != jute.OK || h.Zxid <= 0 {
			t.Fatalf("ping reply %+v", h)
		}
	})
	t.Run("half-open client before the handshake is dropped", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte{0, 0}) // half a length, then silence
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 1)
		if _, err := c.Read(buf); err == nil {
			t.Fatal("server sent data to a half-open client")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("half-open connection not closed within the sessionless timeout")
		}
	})
	// After all of that, a normal client still works.
	c, _ := testutil.Connect(t, addr, 4*time.Second)
	if _, _, err := c.Get("/"); err != nil {
		t.Fatalf("server stopped serving: %v", err)
	}
}

func TestMaxClientConnectionsPerAddress(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxClientCnxns = 2
	srv := startServer(t, cfg)
	a := dialRaw(t, srv.Addr().String())
	b := dialRaw(t, srv.Addr().String())
	if _, err := a.handshake(jute.ConnectRequest{TimeOut: 4000}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.handshake(jute.ConnectRequest{TimeOut: 4000}); err != nil {
		t.Fatal(err)
	}
	third := dialRaw(t, srv.Addr().String())
	third.expectClosed(2 * time.Second)
}

func TestFourLetterWords(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	srv := startServer(t, cfg)
	addr := srv.Addr().String()
	testutil.Connect(t, addr, 4*time.Second)
	checks := []struct {
		cmd   string
		wants []string
	}{
		{"ruok", []string{"imok"}},
		{"isro", []string{"rw"}},
		{"srvr", []string{"Zookeeper version: 3.8.0", "Latency min/avg/max: ", "Received: ", "Sent: ", "Connections: ", "Outstanding: 0\n", "Zxid: 0x", "Mode: standalone\n", "Node count: 5\n"}},
		{"stat", []string{"Clients:\n /127.0.0.1:", "Mode: standalone\n"}},
		{"cons", []string{",sid=0x", "lop=", "to="}},
		{"mntr", []string{"zk_version\t3.8.0", "zk_server_state\tstandalone\n", "zk_znode_count\t5\n", "zk_global_sessions\t1\n", "zk_num_alive_connections\t"}},
		{"envi", []string{"Environment:\n", "zookeeper.version=3.8.0", "os.name=", "user.dir="}},
		{"conf", []string{"clientPort=", "dataDir=", "tickTime=100\n", "minSessionTimeout=200\n", "maxSessionTimeout=2000\n"}},
		{"dirs", []string{"datadir_size: ", "logdir_size: "}},
		{"gtmk", []string{"306"}},
		{"dump", []string{"SessionTracker dump:\n", "ephemeral nodes dump:\n"}},
		{"crst", []string{"Connection stats reset.\n"}},
		{"srst", []string{"Server stats reset.\n"}},
	}
	for _, check := range checks {
		cmd, wants := check.cmd, check.wants
		out, err := testutil.FourLetter(addr, cmd)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%s output lacks %q:\n%s", cmd, w, out)
			}
		}
	}
}

func TestFourLetterWordWhitelist(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.FourLetterWordWhitelist = []string{"ruok"}
	srv := startServer(t, cfg)
	addr := srv.Addr().String()
	if out, _ := testutil.FourLetter(addr, "mntr"); out != "mntr is not executed because it is not in the whitelist.\n" {
		t.Fatalf("mntr with a whitelist of ruok = %q", out)
	}
	if out, _ := testutil.FourLetter(addr, "ruok"); out != "imok" {
		t.Fatalf("ruok = %q", out)
	}
	if out, _ := testutil.FourLetter(addr, "srvr"); !strings.HasPrefix(out, "Zookeeper version:") {
		t.Fatalf("srvr is always allowed, got %q", out)
	}
}

// TestPipelinedReadDoesNotSeeLaterWrite: a client pipelines setData(a),
// getData, setData(b) on one connection; the read waits for the first write
// and must return a, never the value of the write sent after it (per-session
// FIFO), however the two writes are batched.
func TestPipelinedReadDoesNotSeeLaterWrite(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	raw := dialRaw(t, srv.Addr().String())
	if _, err := raw.handshake(jute.ConnectRequest{TimeOut: 4000}); err != nil {
		t.Fatal(err)
	}
	if h, _ := raw.call(jute.OpCreate, &jute.CreateRequest{Path: "/fifo", ACL: jute.OpenACLUnsafe}); h.Err != jute.OK {
		t.Fatal(h.Err)
	}
	for i := 1; i <= 50; i++ {
		base := int32(1000 + 3*i)
		first, later := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		raw.send(&jute.RequestHeader{Xid: base, Type: jute.OpSetData}, &jute.SetDataRequest{Path: "/fifo", Data: []byte(first), Version: -1})
		raw.send(&jute.RequestHeader{Xid: base + 1, Type: jute.OpGetData}, &jute.PathWatchRequest{Path: "/fifo"})
		raw.send(&jute.RequestHeader{Xid: base + 2, Type: jute.OpSetData}, &jute.SetDataRequest{Path: "/fifo", Data: []byte(later), Version: -1})
		for k := int32(0); k < 3; k++ {
			b, err := raw.readFrame(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			d := jute.NewDecoder(b)
			var h jute.ReplyHeader
			h.Decode(d)
			if h.Xid != base+k || h.Err != jute.OK {
				t.Fatalf("round %d: reply %+v, want xid %d", i, h, base+k)
			}
			if k == 1 {
				var r jute.GetDataResponse
				r.Decode(d)
				if string(r.Data) != first {
					t.Fatalf("round %d: the read between setData(%s) and setData(%s) returned %q", i, first, later, r.Data)
				}
			}
		}
	}
}

// TestPipelinedReadsWritesAndSyncs pipelines writes, reads and syncs on one
// connection, standalone and on every member of an ensemble: each read
// returns the value of the write sent just before it, never one sent after
// it, and the pipeline never stalls (a write held back for an earlier read
// must not wait on a sync that waits for that write).
func TestPipelinedReadsWritesAndSyncs(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		srv := startServer(t, testConfig(t, t.TempDir()))
		pipelineRounds(t, srv.Addr().String(), "/mix")
	})
	t.Run("ensemble", func(t *testing.T) {
		e := startEnsemble(t, 3)
		for i := range e.Size() {
			pipelineRounds(t, e.Addr(i), fmt.Sprintf("/mix%d", i))
		}
	})
}

// pipelineRounds sends rounds of setData, getData, (every third round)
// sync, setData, getData without waiting, and checks each round's replies.
func pipelineRounds(t *testing.T, addr, path string) {
	t.Helper()
	raw := dialRaw(t, addr)
	if _, err := raw.handshake(jute.ConnectRequest{TimeOut: 4000}); err != nil {
		t.Fatal(err)
	}
	if h, _ := raw.call(jute.OpCreate, &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe}); h.Err != jute.OK {
		t.Fatal(h.Err)
	}
	type step struct {
		op   jute.OpCode
		req  jute.Record
		want string // getData: the value it must return
	}
	set := func(v string) step {
		return step{op: jute.OpSetData, req: &jute.SetDataRequest{Path: path, Data: []byte(v), Version: -1}}
	}
	get := func(want string) step {
		return step{op: jute.OpGetData, req: &jute.PathWatchRequest{Path: path}, want: want}
	}
	xid := int32(100)
	for i := 0; i < 30; i++ {
		a, b := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		steps := []step{set(a), get(a), set(b), get(b)}
		if i%3 == 0 {
			steps = []step{set(a), get(a), {op: jute.OpSync, req: &jute.PathRequest{Path: path}}, set(b), get(b)}
		}
		for k, s := range steps {
			raw.send(&jute.RequestHeader{Xid: xid + int32(k), Type: s.op}, s.req)
		}
		for _, s := range steps {
			b, err := raw.readFrame(10 * time.Second)
			if err != nil {
				t.Fatalf("%s: round %d: reply %d (%v): %v", addr, i, xid, s.op, err)
			}
			d := jute.NewDecoder(b)
			var h jute.ReplyHeader
			h.Decode(d)
			if h.Xid != xid || h.Err != jute.OK {
				t.Fatalf("%s: round %d: reply %+v, want xid %d (%v) OK", addr, i, h, xid, s.op)
			}
			xid++
			if s.op != jute.OpGetData {
				continue
			}
			var r jute.GetDataResponse
			r.Decode(d)
			if string(r.Data) != s.want {
				t.Fatalf("%s: round %d: getData returned %q, want %q", addr, i, r.Data, s.want)
			}
		}
	}
}

// TestWriteReplyAndLaterEventsInZxidOrder: connection A writes /x while
// connection B writes /y, which A watches. If A's write got the smaller
// zxid, A must receive its reply before the notification of B's write, as
// ZooKeeper delivers a connection's replies and events in zxid order.
func TestWriteReplyAndLaterEventsInZxidOrder(t *testing.T) {
	srv := startServer(t, testConfig(t, t.TempDir()))
	a, b := dialRaw(t, srv.Addr().String()), dialRaw(t, srv.Addr().String())
	for _, c := range []*rawClient{a, b} {
		if _, err := c.handshake(jute.ConnectRequest{TimeOut: 4000}); err != nil {
			t.Fatal(err)
		}
	}
	a.call(jute.OpCreate, &jute.CreateRequest{Path: "/x", ACL: jute.OpenACLUnsafe})
	checked := 0
	for i := 0; i < 200; i++ {
		y := fmt.Sprintf("/y%d", i)
		b.call(jute.OpCreate, &jute.CreateRequest{Path: y, ACL: jute.OpenACLUnsafe})
		if h, _ := a.call(jute.OpExists, &jute.PathWatchRequest{Path: y, Watch: true}); h.Err != jute.OK {
			t.Fatal(h.Err)
		}
		zB := make(chan int64, 1)
		go func() {
			h, _ := b.call(jute.OpSetData, &jute.SetDataRequest{Path: y, Version: -1})
			zB <- h.Zxid
		}()
		a.send(&jute.RequestHeader{Xid: 9000 + int32(i), Type: jute.OpSetData}, &jute.SetDataRequest{Path: "/x", Version: -1})
		var order []string
		var zA int64
		for len(order) < 2 {
			frame, err := a.readFrame(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var h jute.ReplyHeader
			h.Decode(jute.NewDecoder(frame))
			if h.Xid == jute.XidNotification {
				order = append(order, "event")
			} else {
				order = append(order, "reply")
				zA = h.Zxid
			}
		}
		if z := <-zB; zA < z {
			checked++
			if order[0] != "reply" {
				t.Fatalf("round %d: the event of zxid %#x reached A before the reply of its own earlier write (zxid %#x)", i, z, zA)
			}
		}
	}
	t.Logf("%d of 200 rounds had A's write first", checked)
}
