package test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
)

// End-to-end watch tests (issue "Watches"). Raw clients give the exact
// frames and their order; go-zookeeper checks that a stock client gets its
// events, also across reconnects and a server restart. Helper names start
// with "w" to stay clear of the other test files of this package.

// wConfig is testConfig with a 30 s maximum session timeout: raw clients
// never ping, so their sessions must outlive the test.
func wConfig(t *testing.T) conf.Config {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	cfg.MaxSessionTimeout = 30000
	return cfg
}

// wServer starts a server with wConfig and returns its address.
func wServer(t *testing.T) string {
	t.Helper()
	return startServer(t, wConfig(t)).Addr().String()
}

// wOpen dials addr and creates a session with the given timeout.
func wOpen(t *testing.T, addr string, timeoutMs int32) *rawClient {
	t.Helper()
	r := dialRaw(t, addr)
	resp, err := r.handshake(jute.ConnectRequest{TimeOut: timeoutMs})
	if err != nil || resp.SessionID == 0 {
		t.Fatalf("handshake: %+v %v", resp, err)
	}
	return r
}

// wframe is one server frame: its payload (no length prefix), decoded
// reply header, and the bytes after the header.
type wframe struct {
	raw  []byte
	hdr  jute.ReplyHeader
	body []byte
}

func (f wframe) isEvent() bool { return f.hdr.Xid == jute.XidNotification }

// wev is a notification reduced to what the tests compare.
type wev struct {
	Type jute.EventType
	Path string
}

func (e wev) String() string { return e.Type.String() + " " + e.Path }

func wParseFrame(t *testing.T, b []byte) wframe {
	t.Helper()
	d := jute.NewDecoder(b)
	var h jute.ReplyHeader
	h.Decode(d)
	if d.Err() != nil {
		t.Fatalf("frame shorter than a reply header: %x", b)
	}
	return wframe{raw: b, hdr: h, body: d.Rest()}
}

// wEvent decodes a notification, checking what every 3.8 notification
// carries: xid -1, zxid -1, err 0, state SyncConnected, nothing after the
// WatcherEvent.
func wEvent(t *testing.T, f wframe) wev {
	t.Helper()
	if f.hdr != (jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1, Err: jute.OK}) {
		t.Fatalf("notification header %+v, want xid -1 zxid -1 err 0", f.hdr)
	}
	var we jute.WatcherEvent
	if err := jute.Decode(f.body, &we); err != nil {
		t.Fatalf("notification body %x: %v", f.body, err)
	}
	if we.State != jute.StateSyncConnected {
		t.Fatalf("notification state %d, want 3 (SyncConnected)", we.State)
	}
	return wev{we.Type, we.Path}
}

// wNext reads one frame, failing the test if none arrives within d.
func (r *rawClient) wNext(d time.Duration) wframe {
	r.t.Helper()
	b, err := r.readFrame(d)
	if err != nil {
		r.t.Fatalf("read frame: %v", err)
	}
	return wParseFrame(r.t, b)
}

// wSend queues one request under the next xid and returns the xid.
func (r *rawClient) wSend(op jute.OpCode, req jute.Record) int32 {
	r.t.Helper()
	r.xid++
	h := jute.RequestHeader{Xid: r.xid, Type: op}
	if req == nil {
		r.send(&h)
	} else {
		r.send(&h, req)
	}
	return r.xid
}

// wAwait reads frames up to the reply to xid and returns the notifications
// that came before it, in order.
func (r *rawClient) wAwait(xid int32) ([]wev, wframe) {
	r.t.Helper()
	var evs []wev
	for {
		f := r.wNext(10 * time.Second)
		if f.isEvent() {
			evs = append(evs, wEvent(r.t, f))
			continue
		}
		if f.hdr.Xid != xid {
			r.t.Fatalf("reply with xid %d while waiting for %d", f.hdr.Xid, xid)
		}
		return evs, f
	}
}

// wDo sends a request and waits for its reply.
func (r *rawClient) wDo(s wstep) ([]wev, wframe) {
	r.t.Helper()
	return r.wAwait(r.wSend(s.op, s.req))
}

// wMust runs steps that must all succeed and returns the notifications
// received meanwhile.
func (r *rawClient) wMust(steps ...wstep) []wev {
	r.t.Helper()
	var all []wev
	for _, s := range steps {
		evs, f := r.wDo(s)
		if f.hdr.Err != jute.OK {
			r.t.Fatalf("%v %s: %v", s.op, s.path(), f.hdr.Err)
		}
		all = append(all, evs...)
	}
	return all
}

// wBarrier round-trips a read and returns the notifications queued before
// its reply. Every event of a write whose reply has been received, on any
// connection, is among them: the apply hook queues notifications before the
// write completes, and a read's reply is queued after that.
func (r *rawClient) wBarrier() []wev {
	r.t.Helper()
	evs, _ := r.wDo(wstep{jute.OpExists, &jute.PathWatchRequest{Path: "/"}})
	return evs
}

// wstep is one request of a scenario.
type wstep struct {
	op  jute.OpCode
	req jute.Record
}

func (s wstep) path() string {
	switch r := s.req.(type) {
	case *jute.CreateRequest:
		return r.Path
	case *jute.SetDataRequest:
		return r.Path
	case *jute.DeleteRequest:
		return r.Path
	case *jute.PathWatchRequest:
		return r.Path
	case *jute.AddWatchRequest:
		return r.Path
	case *jute.WatchesRequest:
		return r.Path
	}
	return ""
}

func wCreate(path string) wstep { return wCreateData(path, "") }

func wCreateData(path, data string) wstep {
	return wstep{jute.OpCreate, &jute.CreateRequest{Path: path, Data: []byte(data), ACL: jute.OpenACLUnsafe}}
}

func wCreateEphemeral(path string) wstep {
	return wstep{jute.OpCreate, &jute.CreateRequest{Path: path, ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral}}
}

func wSet(path, data string) wstep { return wSetVersion(path, data, -1) }

func wSetVersion(path, data string, version int32) wstep {
	return wstep{jute.OpSetData, &jute.SetDataRequest{Path: path, Data: []byte(data), Version: version}}
}

func wDelete(path string) wstep {
	return wstep{jute.OpDelete, &jute.DeleteRequest{Path: path, Version: -1}}
}

func wGetDataW(path string) wstep {
	return wstep{jute.OpGetData, &jute.PathWatchRequest{Path: path, Watch: true}}
}

func wExistsW(path string) wstep {
	return wstep{jute.OpExists, &jute.PathWatchRequest{Path: path, Watch: true}}
}

func wChildrenW(path string) wstep {
	return wstep{jute.OpGetChildren, &jute.PathWatchRequest{Path: path, Watch: true}}
}

func wAddWatch(path string, mode jute.AddWatchMode) wstep {
	return wstep{jute.OpAddWatch, &jute.AddWatchRequest{Path: path, Mode: mode}}
}

func wMulti(steps ...wstep) wstep {
	m := &jute.MultiRequest{}
	for _, s := range steps {
		m.Ops = append(m.Ops, jute.MultiOp{Type: s.op, Request: s.req})
	}
	return wstep{jute.OpMulti, m}
}

// wEvents formats events for failure messages.
func wEvents(evs []wev) string {
	parts := make([]string, len(evs))
	for i, e := range evs {
		parts[i] = e.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func wCheckEvents(t *testing.T, what string, got, want []wev) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: notifications %s, want %s", what, wEvents(got), wEvents(want))
	}
}

// TestWatchTriggers arms watches on one raw connection, changes the tree
// from another, and checks the exact notifications the first one received:
// each standard watch and its events, one-shot consumption, one
// notification per connection per event, multi, and the persistent and
// recursive addWatch modes.
func TestWatchTriggers(t *testing.T) {
	addr := wServer(t)
	const (
		created  = jute.EventNodeCreated
		deleted  = jute.EventNodeDeleted
		changed  = jute.EventNodeDataChanged
		children = jute.EventNodeChildrenChanged
	)
	cases := []struct {
		name   string
		setup  []wstep // by the writer, before arming
		arm    []wstep // by the watcher (exists may answer NoNode)
		change []wstep // by the writer
		want   []wev
	}{
		{
			name:   "exists on a missing node fires NodeCreated once",
			setup:  []wstep{wCreate("/a")},
			arm:    []wstep{wExistsW("/a/n")},
			change: []wstep{wCreate("/a/n"), wSet("/a/n", "x"), wDelete("/a/n")},
			want:   []wev{{created, "/a/n"}},
		},
		{
			name:   "exists on a node fires NodeDataChanged once",
			setup:  []wstep{wCreate("/b")},
			arm:    []wstep{wExistsW("/b")},
			change: []wstep{wSet("/b", "1"), wSet("/b", "2"), wDelete("/b")},
			want:   []wev{{changed, "/b"}},
		},
		{
			name:   "exists on a node fires NodeDeleted",
			setup:  []wstep{wCreate("/c")},
			arm:    []wstep{wExistsW("/c")},
			change: []wstep{wDelete("/c"), wCreate("/c")},
			want:   []wev{{deleted, "/c"}},
		},
		{
			name:   "getData fires NodeDataChanged once",
			setup:  []wstep{wCreateData("/d", "0")},
			arm:    []wstep{wGetDataW("/d")},
			change: []wstep{wSet("/d", "1"), wSet("/d", "2")},
			want:   []wev{{changed, "/d"}},
		},
		{
			name:   "getData fires NodeDeleted",
			setup:  []wstep{wCreate("/e")},
			arm:    []wstep{wGetDataW("/e")},
			change: []wstep{wDelete("/e")},
			want:   []wev{{deleted, "/e"}},
		},
		{
			name:   "getData on a missing node sets no watch",
			arm:    []wstep{wGetDataW("/f")},
			change: []wstep{wCreate("/f"), wSet("/f", "1")},
			want:   nil,
		},
		{
			name:   "getChildren fires NodeChildrenChanged once on child create",
			setup:  []wstep{wCreate("/g")},
			arm:    []wstep{wChildrenW("/g")},
			change: []wstep{wCreate("/g/x"), wCreate("/g/y")},
			want:   []wev{{children, "/g"}},
		},
		{
			name:   "getChildren ignores data changes and fires on child delete",
			setup:  []wstep{wCreate("/h"), wCreate("/h/x")},
			arm:    []wstep{wChildrenW("/h")},
			change: []wstep{wSet("/h", "1"), wSet("/h/x", "1"), wCreate("/h/x/deep"), wDelete("/h/x/deep"), wDelete("/h/x")},
			want:   []wev{{children, "/h"}},
		},
		{
			name:   "getChildren fires NodeDeleted when the node itself goes",
			setup:  []wstep{wCreate("/i")},
			arm:    []wstep{wChildrenW("/i")},
			change: []wstep{wDelete("/i")},
			want:   []wev{{deleted, "/i"}},
		},
		{
			name:   "child events of top-level nodes use the path /",
			arm:    []wstep{wChildrenW("/")},
			change: []wstep{wCreate("/top")},
			want:   []wev{{children, "/"}},
		},
		{
			name:  "data, exist, child, persistent and ancestor recursive watches: one NodeDeleted",
			setup: []wstep{wCreate("/j"), wCreate("/j/k")},
			arm: []wstep{wGetDataW("/j/k"), wExistsW("/j/k"), wChildrenW("/j/k"),
				wAddWatch("/j/k", jute.AddWatchPersistent), wAddWatch("/j", jute.AddWatchPersistentRecursive)},
			change: []wstep{wDelete("/j/k")},
			want:   []wev{{deleted, "/j/k"}},
		},
		{
			name:   "multi fires per sub-op, in op order",
			setup:  []wstep{wCreate("/m"), wCreate("/m/y"), wCreate("/m/z")},
			arm:    []wstep{wExistsW("/m/x"), wGetDataW("/m/y"), wGetDataW("/m/z"), wChildrenW("/m")},
			change: []wstep{wMulti(wCreate("/m/x"), wSet("/m/y", "1"), wDelete("/m/z"))},
			want:   []wev{{created, "/m/x"}, {children, "/m"}, {changed, "/m/y"}, {deleted, "/m/z"}},
		},
		{
			name:   "a failed multi fires nothing",
			setup:  []wstep{wCreate("/n")},
			arm:    []wstep{wGetDataW("/n"), wExistsW("/n/x")},
			change: []wstep{wMulti(wCreate("/n/x"), wSetVersion("/n", "1", 99)), wSet("/n", "2")},
			want:   []wev{{changed, "/n"}},
		},
		{
			name: "persistent: the path and its direct children, survives firing and deletion",
			arm:  []wstep{wAddWatch("/p", jute.AddWatchPersistent)},
			change: []wstep{wCreate("/p"), wSet("/p", "1"), wCreate("/p/c"), wSet("/p/c", "1"),
				wCreate("/p/c/g"), wDelete("/p/c/g"), wDelete("/p/c"), wSet("/p", "2"), wDelete("/p"), wCreate("/p")},
			want: []wev{{created, "/p"}, {changed, "/p"}, {children, "/p"}, {children, "/p"},
				{changed, "/p"}, {deleted, "/p"}, {created, "/p"}},
		},
		{
			name: "recursive: every descendant, never NodeChildrenChanged, not /rx",
			arm:  []wstep{wAddWatch("/r", jute.AddWatchPersistentRecursive)},
			change: []wstep{wCreate("/r"), wCreate("/rx"), wCreate("/r/a"), wCreate("/r/a/b"), wSet("/r/a/b", "1"),
				wSet("/rx", "1"), wCreate("/rx/y"), wDelete("/r/a/b"), wSet("/r", "1"), wDelete("/r/a")},
			want: []wev{{created, "/r"}, {created, "/r/a"}, {created, "/r/a/b"}, {changed, "/r/a/b"},
				{deleted, "/r/a/b"}, {changed, "/r"}, {deleted, "/r/a"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writer := wOpen(t, addr, 30000)
			watcher := wOpen(t, addr, 30000)
			writer.wMust(tc.setup...)
			for _, s := range tc.arm {
				if evs, f := watcher.wDo(s); len(evs) > 0 || (f.hdr.Err != jute.OK && f.hdr.Err != jute.NoNode) {
					t.Fatalf("arming %v %s: %v, events %s", s.op, s.path(), f.hdr.Err, wEvents(evs))
				}
			}
			if evs := writer.wMust(tc.change...); len(evs) > 0 {
				t.Fatalf("the writer, which set no watch, got %s", wEvents(evs))
			}
			wCheckEvents(t, "watcher", watcher.wBarrier(), tc.want)
		})
	}
}

// TestStandardWatchesGoClient checks that go-zookeeper's GetW, ExistsW and
// ChildrenW receive the right event on each trigger.
func TestStandardWatchesGoClient(t *testing.T) {
	addr := wServer(t)
	watcher, _ := testutil.Connect(t, addr, 10*time.Second)
	writer, _ := testutil.Connect(t, addr, 10*time.Second)
	acl := zk.WorldACL(zk.PermAll)
	exists := func(p string) (<-chan zk.Event, error) { _, _, ch, err := watcher.ExistsW(p); return ch, err }
	get := func(p string) (<-chan zk.Event, error) { _, _, ch, err := watcher.GetW(p); return ch, err }
	kids := func(p string) (<-chan zk.Event, error) { _, _, ch, err := watcher.ChildrenW(p); return ch, err }
	create := func(p string) error { _, err := writer.Create(p, nil, 0, acl); return err }
	set := func(p string) error { _, err := writer.Set(p, []byte("new"), -1); return err }
	del := func(p string) error { return writer.Delete(p, -1) }
	cases := []struct {
		name   string
		setup  []string
		arm    func(string) (<-chan zk.Event, error)
		path   string
		change func(string) error
		want   zk.EventType
		evPath string
	}{
		{"ExistsW on a missing node", nil, exists, "/ge1", create, zk.EventNodeCreated, "/ge1"},
		{"ExistsW then setData", []string{"/ge2"}, exists, "/ge2", set, zk.EventNodeDataChanged, "/ge2"},
		{"ExistsW then delete", []string{"/ge3"}, exists, "/ge3", del, zk.EventNodeDeleted, "/ge3"},
		{"GetW then setData", []string{"/gg1"}, get, "/gg1", set, zk.EventNodeDataChanged, "/gg1"},
		{"GetW then delete", []string{"/gg2"}, get, "/gg2", del, zk.EventNodeDeleted, "/gg2"},
		{"ChildrenW then child create", []string{"/gc1"}, kids, "/gc1",
			func(p string) error { return create(p + "/k") }, zk.EventNodeChildrenChanged, "/gc1"},
		{"ChildrenW then child delete", []string{"/gc2", "/gc2/k"}, kids, "/gc2",
			func(p string) error { return del(p + "/k") }, zk.EventNodeChildrenChanged, "/gc2"},
		{"ChildrenW then delete", []string{"/gc3"}, kids, "/gc3", del, zk.EventNodeDeleted, "/gc3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.setup {
				if err := create(p); err != nil {
					t.Fatalf("create %s: %v", p, err)
				}
			}
			ch, err := tc.arm(tc.path)
			if err != nil {
				t.Fatalf("arm: %v", err)
			}
			if err := tc.change(tc.path); err != nil {
				t.Fatalf("change: %v", err)
			}
			select {
			case ev := <-ch:
				if ev.Type != tc.want || ev.Path != tc.evPath || ev.State != zk.StateSyncConnected || ev.Err != nil {
					t.Fatalf("event %+v, want %v on %s in state SyncConnected", ev, tc.want, tc.evPath)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no %v event within 10s", tc.want)
			}
		})
	}
}

// wVectorFrame is one frame of a capture in ../jute/testdata/vectors (the
// real ZooKeeper 3.8.0 captures of the spec).
type wVectorFrame struct {
	client bool
	conn   int
	b      []byte // payload, without the length prefix
}

var wDecodeComment = regexp.MustCompile(`^#   \[c(\d+)\]`)

// wLoadVector reads the frames of a capture file; each frame is tagged with
// the connection named by the decode comment that follows it.
func wLoadVector(t *testing.T, name string) []wVectorFrame {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "jute", "testdata", "vectors", name))
	if err != nil {
		t.Fatalf("open vector: %v", err)
	}
	defer f.Close()
	var frames []wVectorFrame
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if m := wDecodeComment.FindStringSubmatch(line); m != nil && len(frames) > 0 && frames[len(frames)-1].conn == 0 {
			frames[len(frames)-1].conn, _ = strconv.Atoi(m[1])
			continue
		}
		client := strings.HasPrefix(line, "C> ")
		if !client && !strings.HasPrefix(line, "S< ") {
			continue
		}
		b, err := hex.DecodeString(line[3:])
		if err != nil || len(b) < 4 {
			t.Fatalf("%s: bad frame line %q", name, line)
		}
		frames = append(frames, wVectorFrame{client: client, b: b[4:]})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return frames
}

// TestWatchVectorsReplay replays the client side of real-ZooKeeper captures
// that involve watches and compares every server frame: notifications byte
// for byte, replies by length, xid and error code, and the bodies of create
// and addWatch replies exactly (other bodies hold run-specific zxids and
// times).
func TestWatchVectorsReplay(t *testing.T) {
	cases := []struct {
		file  string
		setup []wstep
	}{
		{"getdata_watch_setdata.txt", []wstep{wCreate("/v"), wCreateData("/v/gw", "one")}},
		{"getchildren.txt", []wstep{wCreate("/v"), wCreate("/v/gc"), wCreate("/v/gc/a"), wCreate("/v/gc/b")}},
		{"exists_missing.txt", []wstep{wCreate("/v")}},
		{"zkcli_addwatch_recursive.txt", []wstep{wCreate("/v"), wCreate("/v/aw")}},
		{"c_client.txt", []wstep{wCreate("/v")}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			cfg := wConfig(t)
			cfg.ExtendedTypesEnabled = true // c_client creates a TTL node
			addr := startServer(t, cfg).Addr().String()
			wOpen(t, addr, 30000).wMust(tc.setup...)
			wReplay(t, addr, wLoadVector(t, tc.file))
		})
	}
}

// wReplay plays connection 1 of a capture against addr.
func wReplay(t *testing.T, addr string, frames []wVectorFrame) {
	t.Helper()
	r := dialRaw(t, addr)
	ops := map[int32]jute.OpCode{}
	connected := false
	for i, vf := range frames {
		if vf.conn != 1 {
			continue
		}
		if vf.client {
			var h jute.RequestHeader
			h.Decode(jute.NewDecoder(vf.b))
			ops[h.Xid] = h.Type
			r.c.Write(binaryFrame(vf.b))
			continue
		}
		got, err := r.readFrame(10 * time.Second)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if len(got) != len(vf.b) {
			t.Fatalf("frame %d: %d bytes, want %d\n got %x\nwant %x", i, len(got), len(vf.b), got, vf.b)
		}
		if !connected {
			// protocolVersion and timeOut match; session id and password
			// are run-specific.
			connected = true
			if !bytes.Equal(got[:8], vf.b[:8]) {
				t.Fatalf("connect response %x, want %x", got, vf.b)
			}
			continue
		}
		gf, wf := wParseFrame(t, got), wParseFrame(t, vf.b)
		if wf.isEvent() {
			if !bytes.Equal(got, vf.b) {
				t.Fatalf("frame %d: notification %x, want %x", i, got, vf.b)
			}
			continue
		}
		if gf.hdr.Xid != wf.hdr.Xid || gf.hdr.Err != wf.hdr.Err {
			t.Fatalf("frame %d: reply %+v, want xid %d err %v", i, gf.hdr, wf.hdr.Xid, wf.hdr.Err)
		}
		if op := ops[wf.hdr.Xid]; (op == jute.OpCreate || op == jute.OpAddWatch) && !bytes.Equal(gf.body, wf.body) {
			t.Fatalf("frame %d: %v reply body %x, want %x", i, op, gf.body, wf.body)
		}
	}
	r.expectClosed(5 * time.Second) // every replayed capture ends with closeSession
}

// binaryFrame puts the length prefix back on a payload.
func binaryFrame(payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, payload...)
}

// TestNotificationBeforeWriteReply checks, on one connection with requests
// pipelined, that a write's event comes after the reply of the read that
// set the watch and before the write's own reply and every later reply.
func TestNotificationBeforeWriteReply(t *testing.T) {
	addr := wServer(t)
	r := wOpen(t, addr, 30000)
	r.wMust(wCreateData("/o", "old"), wCreate("/oc"))
	// Nothing is read until every request is sent.
	xGet := r.wSend(jute.OpGetData, &jute.PathWatchRequest{Path: "/o", Watch: true})
	xKids := r.wSend(jute.OpGetChildren, &jute.PathWatchRequest{Path: "/oc", Watch: true})
	xSet := r.wSend(jute.OpSetData, &jute.SetDataRequest{Path: "/o", Data: []byte("new"), Version: -1})
	xCreate := r.wSend(jute.OpCreate, &jute.CreateRequest{Path: "/oc/k", ACL: jute.OpenACLUnsafe})
	xRead := r.wSend(jute.OpGetData, &jute.PathWatchRequest{Path: "/o"})
	pos := map[any]int{} // xid or event -> position in the stream
	var replies []int32
	for i := 0; len(replies) < 5; i++ {
		f := r.wNext(10 * time.Second)
		if f.isEvent() {
			pos[wEvent(t, f)] = i
			continue
		}
		pos[f.hdr.Xid] = i
		replies = append(replies, f.hdr.Xid)
		if f.hdr.Xid == xRead {
			var resp jute.GetDataResponse
			if err := jute.Decode(f.body, &resp); err != nil || string(resp.Data) != "new" {
				t.Fatalf("read after the write = %q %v", resp.Data, err)
			}
		}
	}
	if want := []int32{xGet, xKids, xSet, xCreate, xRead}; !slices.Equal(replies, want) {
		t.Fatalf("replies in order %v, want %v", replies, want)
	}
	for _, c := range []struct {
		ev        wev
		after, by int32 // the read that set the watch, the write that fires it
	}{
		{wev{jute.EventNodeDataChanged, "/o"}, xGet, xSet},
		{wev{jute.EventNodeChildrenChanged, "/oc"}, xKids, xCreate},
	} {
		p, ok := pos[c.ev]
		if !ok {
			t.Fatalf("no %v", c.ev)
		}
		if p < pos[c.after] || p > pos[c.by] {
			t.Fatalf("%v at frame %d; want it after the reply to xid %d (frame %d) and before the reply to xid %d (frame %d)",
				c.ev, p, c.after, pos[c.after], c.by, pos[c.by])
		}
	}
	if len(pos) != 7 {
		t.Fatalf("%d distinct frames, want 5 replies and 2 events", len(pos))
	}
}

// TestEventBeforeNewDataOnRead races writers on other connections against a
// connection that keeps re-reading a node with getData(watch). Two of
// ZooKeeper's ordering rules are checked on the reader's frame stream:
//   - a reply showing data newer than the previous reply is preceded by the
//     NodeDataChanged of the watch the previous read set;
//   - a watch set by a read never fires before that read's reply (a client
//     registers its watcher when the reply arrives; an earlier event would
//     be lost and the watch never fire).
func TestEventBeforeNewDataOnRead(t *testing.T) {
	cfg := wConfig(t)
	cfg.ForceSync = false // many writes; their order, not their durability, is under test
	addr := startServer(t, cfg).Addr().String()
	r := wOpen(t, addr, 30000)
	r.wMust(wCreateData("/hot", "0"))

	writer, _ := testutil.Connect(t, addr, 10*time.Second)
	const writers, perWriter = 4, 400
	errc := make(chan error, writers)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				if _, err := writer.Set("/hot", []byte(strconv.Itoa(i)), -1); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()

	lastVersion := int32(-1)
	armed := false // the client has a watch it was told about (a reply came)
	fired := false // an event arrived since the last reply
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true // one more read sees the final state
		default:
		}
		xid := r.wSend(jute.OpGetData, &jute.PathWatchRequest{Path: "/hot", Watch: true})
		for {
			f := r.wNext(10 * time.Second)
			if f.isEvent() {
				if ev := wEvent(t, f); ev != (wev{jute.EventNodeDataChanged, "/hot"}) {
					t.Fatalf("unexpected %v", ev)
				}
				if !armed {
					t.Fatal("NodeDataChanged arrived before the reply of the getData that set the watch")
				}
				armed, fired = false, true
				continue
			}
			if f.hdr.Xid != xid || f.hdr.Err != jute.OK {
				t.Fatalf("reply %+v, want xid %d OK", f.hdr, xid)
			}
			var resp jute.GetDataResponse
			if err := jute.Decode(f.body, &resp); err != nil {
				t.Fatal(err)
			}
			if v := resp.Stat.Version; v != lastVersion {
				if lastVersion >= 0 && !fired {
					t.Fatalf("read shows version %d after version %d without a NodeDataChanged first", v, lastVersion)
				}
				lastVersion = v
			}
			armed, fired = true, false
			break
		}
	}
	select {
	case err := <-errc:
		t.Fatalf("writer: %v", err)
	default:
	}
	if lastVersion != writers*perWriter {
		t.Fatalf("final version %d, want %d", lastVersion, writers*perWriter)
	}
}

// TestAddWatchBeforeEvents races writers against a connection that adds and
// removes a persistent watch: no event may arrive between the removeWatches
// reply and the next addWatch reply.
func TestAddWatchBeforeEvents(t *testing.T) {
	addr := wServer(t)
	r := wOpen(t, addr, 30000)
	r.wMust(wCreateData("/aw", "0"))
	writer, _ := testutil.Connect(t, addr, 10*time.Second)
	stop := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := writer.Set("/aw", []byte(strconv.Itoa(i)), -1); err != nil {
				errc <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-errc; err != nil {
			t.Errorf("writer: %v", err)
		}
	}()
	seen := 0
	for i := 0; i < 300; i++ {
		evs, f := r.wDo(wAddWatch("/aw", jute.AddWatchPersistent))
		if f.hdr.Err != jute.OK || len(f.body) != 4 {
			t.Fatalf("addWatch: %+v body %x", f.hdr, f.body)
		}
		if len(evs) > 0 {
			t.Fatalf("round %d: %s arrived before the addWatch reply, with no watch armed", i, wEvents(evs))
		}
		evs, f = r.wDo(wstep{jute.OpRemoveWatches, &jute.WatchesRequest{Path: "/aw", Type: jute.WatcherAny}})
		if f.hdr.Err != jute.OK {
			t.Fatalf("removeWatches: %v", f.hdr.Err)
		}
		seen += len(evs)
	}
	t.Logf("%d events delivered while the watch was armed", seen)
}

// TestAddWatchReplyAndModes checks the addWatch reply (header + int 0) and
// that an unknown mode is a MarshallingError that keeps the connection.
func TestAddWatchReplyAndModes(t *testing.T) {
	addr := wServer(t)
	r := wOpen(t, addr, 30000)
	for _, mode := range []jute.AddWatchMode{jute.AddWatchPersistent, jute.AddWatchPersistentRecursive} {
		_, f := r.wDo(wAddWatch("/not/there", mode))
		if f.hdr.Err != jute.OK || !bytes.Equal(f.body, []byte{0, 0, 0, 0}) {
			t.Fatalf("addWatch mode %d: %+v body %x, want err 0 and body 00000000", mode, f.hdr, f.body)
		}
	}
	for _, mode := range []jute.AddWatchMode{2, -1, 100} {
		_, f := r.wDo(wAddWatch("/x", mode))
		if f.hdr.Err != jute.MarshallingError || len(f.body) != 0 {
			t.Fatalf("addWatch mode %d: %+v body %x, want MarshallingError and no body", mode, f.hdr, f.body)
		}
	}
	// The connection still works and the invalid modes armed nothing.
	wOpen(t, addr, 30000).wMust(wCreate("/x"))
	wCheckEvents(t, "after invalid addWatch modes", r.wBarrier(), nil)
}

// TestRemoveAndCheckWatches runs checkWatches (17) and removeWatches (18)
// with every watcher type, in ZooKeeper 3.9's meaning, then
// checks by a change which watches are left.
func TestRemoveAndCheckWatches(t *testing.T) {
	addr := wServer(t)
	type call struct {
		op   jute.OpCode
		path string
		typ  jute.WatcherType
		want jute.Code
	}
	check := func(path string, typ jute.WatcherType, want jute.Code) call {
		return call{jute.OpCheckWatches, path, typ, want}
	}
	remove := func(path string, typ jute.WatcherType, want jute.Code) call {
		return call{jute.OpRemoveWatches, path, typ, want}
	}
	const (
		ok       = jute.OK
		none     = jute.NoWatcher
		children = jute.WatcherChildren
		data     = jute.WatcherData
		anyType  = jute.WatcherAny
		pers     = jute.WatcherPersistent
		rec      = jute.WatcherPersistentRecursive
	)
	cases := []struct {
		name   string
		arm    []wstep
		calls  []call
		change []wstep
		want   []wev
	}{
		{
			name: "no watch: NoWatcher for every type",
			calls: []call{check("/w", children, none), check("/w", data, none), check("/w", anyType, none),
				check("/w", pers, none), check("/w", rec, none), remove("/w", children, none),
				remove("/w", data, none), remove("/w", anyType, none), remove("/w", pers, none), remove("/w", rec, none)},
		},
		{
			name: "child watch",
			arm:  []wstep{wChildrenW("/w")},
			calls: []call{check("/w", data, none), check("/w", children, ok), check("/w", anyType, ok),
				check("/w", pers, none), check("/w", rec, none), remove("/w", data, none),
				remove("/w", children, ok), check("/w", children, none), remove("/w", children, none)},
			change: []wstep{wCreate("/w/c")},
		},
		{
			name: "data watch removed with Any",
			arm:  []wstep{wGetDataW("/w")},
			calls: []call{check("/w", children, none), check("/w", data, ok), check("/w/c", data, none),
				remove("/w", anyType, ok), check("/w", data, none), check("/w", anyType, none)},
			change: []wstep{wSet("/w", "1")},
		},
		{
			name:   "removing the child watch keeps the data watch",
			arm:    []wstep{wGetDataW("/w"), wChildrenW("/w")},
			calls:  []call{remove("/w", children, ok), check("/w", data, ok), check("/w", children, none)},
			change: []wstep{wCreate("/w/c"), wSet("/w", "1")},
			want:   []wev{{jute.EventNodeDataChanged, "/w"}},
		},
		{
			name:   "exist watch on a missing node is a data watch",
			arm:    []wstep{wExistsW("/w/missing")},
			calls:  []call{check("/w/missing", children, none), check("/w/missing", data, ok), remove("/w/missing", data, ok)},
			change: []wstep{wCreate("/w/missing")},
		},
		{
			name: "persistent is neither Data nor Children (3.9)",
			arm:  []wstep{wAddWatch("/w", jute.AddWatchPersistent)},
			calls: []call{check("/w", pers, ok), check("/w", data, none), check("/w", children, none),
				check("/w", rec, none), check("/w", anyType, ok), remove("/w", data, none), remove("/w", children, none),
				remove("/w", rec, none)},
			change: []wstep{wSet("/w", "1"), wCreate("/w/c")},
			want:   []wev{{jute.EventNodeDataChanged, "/w"}, {jute.EventNodeChildrenChanged, "/w"}},
		},
		{
			name:   "persistent removed with type 4",
			arm:    []wstep{wAddWatch("/w", jute.AddWatchPersistent)},
			calls:  []call{remove("/w", pers, ok), check("/w", pers, none), check("/w", anyType, none), remove("/w", pers, none)},
			change: []wstep{wSet("/w", "1"), wCreate("/w/c")},
		},
		{
			name: "recursive: type 5 on exactly the path",
			arm:  []wstep{wAddWatch("/w", jute.AddWatchPersistentRecursive)},
			calls: []call{check("/w", rec, ok), check("/w", pers, none), check("/w", anyType, ok),
				check("/w/c", anyType, none), remove("/w/c", rec, none), remove("/w", rec, ok), check("/w", anyType, none)},
			change: []wstep{wSet("/w", "1"), wCreate("/w/c")},
		},
		{
			name: "Any removes every mode at once",
			arm: []wstep{wGetDataW("/w"), wChildrenW("/w"), wAddWatch("/w", jute.AddWatchPersistent),
				wAddWatch("/w", jute.AddWatchPersistentRecursive)},
			calls:  []call{remove("/w", anyType, ok), check("/w", anyType, none), remove("/w", anyType, none)},
			change: []wstep{wSet("/w", "1"), wCreate("/w/c"), wDelete("/w/c")},
		},
		{
			name: "unknown types are MarshallingError",
			arm:  []wstep{wGetDataW("/w")},
			calls: []call{check("/w", 0, jute.MarshallingError), check("/w", 6, jute.MarshallingError),
				remove("/w", -1, jute.MarshallingError), remove("/w", 6, jute.MarshallingError)},
			change: []wstep{wSet("/w", "1")},
			want:   []wev{{jute.EventNodeDataChanged, "/w"}},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each case works under its own root; "/w" stands for it.
			root := fmt.Sprintf("/rw%d", i)
			rebase := func(p string) string { return root + strings.TrimPrefix(p, "/w") }
			writer := wOpen(t, addr, 30000)
			writer.wMust(wCreate(root))
			r := wOpen(t, addr, 30000)
			for _, s := range tc.arm {
				s = wRebase(s, rebase)
				if _, f := r.wDo(s); f.hdr.Err != jute.OK && f.hdr.Err != jute.NoNode {
					t.Fatalf("arm %v: %v", s.op, f.hdr.Err)
				}
			}
			for _, c := range tc.calls {
				_, f := r.wDo(wstep{c.op, &jute.WatchesRequest{Path: rebase(c.path), Type: c.typ}})
				if f.hdr.Err != c.want || len(f.body) != 0 {
					t.Fatalf("%v %s type %d: %v (body %x), want %v", c.op, c.path, c.typ, f.hdr.Err, f.body, c.want)
				}
			}
			for _, s := range tc.change {
				writer.wMust(wRebase(s, rebase))
			}
			want := make([]wev, len(tc.want))
			for i, e := range tc.want {
				want[i] = wev{e.Type, rebase(e.Path)}
			}
			wCheckEvents(t, "after the calls", r.wBarrier(), want)
		})
	}
}

// wRebase returns s with its path passed through f.
func wRebase(s wstep, f func(string) string) wstep {
	switch r := s.req.(type) {
	case *jute.CreateRequest:
		c := *r
		c.Path = f(r.Path)
		return wstep{s.op, &c}
	case *jute.SetDataRequest:
		c := *r
		c.Path = f(r.Path)
		return wstep{s.op, &c}
	case *jute.DeleteRequest:
		c := *r
		c.Path = f(r.Path)
		return wstep{s.op, &c}
	case *jute.PathWatchRequest:
		c := *r
		c.Path = f(r.Path)
		return wstep{s.op, &c}
	case *jute.AddWatchRequest:
		c := *r
		c.Path = f(r.Path)
		return wstep{s.op, &c}
	}
	return s
}

// TestEphemeralDeletionEvents checks the events of ephemeral nodes removed
// by closeSession and by expiry, including the closing session's own watch.
func TestEphemeralDeletionEvents(t *testing.T) {
	t.Run("closeSession", func(t *testing.T) {
		addr := wServer(t)
		owner := wOpen(t, addr, 30000)
		owner.wMust(wCreate("/eph"), wCreateEphemeral("/eph/a"), wCreateEphemeral("/eph/b"), wGetDataW("/eph/a"))
		watcher := wOpen(t, addr, 30000)
		watcher.wMust(wGetDataW("/eph/a"), wExistsW("/eph/b"), wChildrenW("/eph"))
		// The owner's own watch fires before its closeSession reply.
		evs, f := owner.wDo(wstep{jute.OpCloseSession, nil})
		if f.hdr.Err != jute.OK || len(f.body) != 0 {
			t.Fatalf("closeSession reply %+v", f.hdr)
		}
		wCheckEvents(t, "owner", evs, []wev{{jute.EventNodeDeleted, "/eph/a"}})
		owner.expectClosed(5 * time.Second)
		got := watcher.wBarrier()
		// Each deletion is NodeDeleted(node) then NodeChildrenChanged(parent);
		// the one-shot child watch fires for the first deletion only. Which
		// node goes first is not specified.
		if len(got) != 3 || got[0].Type != jute.EventNodeDeleted {
			t.Fatalf("watcher got %s, want two NodeDeleted and one NodeChildrenChanged, a NodeDeleted first", wEvents(got))
		}
		slices.SortFunc(got, func(a, b wev) int { return strings.Compare(a.String(), b.String()) })
		wCheckEvents(t, "watcher (sorted)", got, []wev{{jute.EventNodeChildrenChanged, "/eph"},
			{jute.EventNodeDeleted, "/eph/a"}, {jute.EventNodeDeleted, "/eph/b"}})
	})
	t.Run("expiry", func(t *testing.T) {
		addr := wServer(t)
		owner := wOpen(t, addr, 400)
		owner.wMust(wCreate("/exp"), wCreateEphemeral("/exp/a"))
		watcher := wOpen(t, addr, 30000)
		watcher.wMust(wGetDataW("/exp/a"), wChildrenW("/exp"))
		// The owner stays silent and expires after ~400ms.
		var got []wev
		for len(got) < 2 {
			got = append(got, wEvent(t, watcher.wNext(10*time.Second)))
		}
		wCheckEvents(t, "watcher", got, []wev{{jute.EventNodeDeleted, "/exp/a"}, {jute.EventNodeChildrenChanged, "/exp"}})
		owner.expectClosed(5 * time.Second)
	})
	t.Run("go client close", func(t *testing.T) {
		addr := wServer(t)
		owner, _ := testutil.Connect(t, addr, 10*time.Second)
		watcher, _ := testutil.Connect(t, addr, 10*time.Second)
		if _, err := owner.Create("/gone", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		_, _, ch, err := watcher.ExistsW("/gone")
		if err != nil {
			t.Fatal(err)
		}
		owner.Close()
		select {
		case ev := <-ch:
			if ev.Type != zk.EventNodeDeleted || ev.Path != "/gone" {
				t.Fatalf("event %+v", ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no NodeDeleted after the owner closed")
		}
	})
}

// TestSetWatchesOnReconnect has a raw session arm watches, lose its TCP
// connection, miss changes, resume with lastZxidSeen and re-send its watches
// with setWatches2 (105) or setWatches (101): missed events come first, in
// list order, then the header-only reply with the request's xid; the other
// watches fire on later changes, the fired ones do not.
func TestSetWatchesOnReconnect(t *testing.T) {
	vector := map[string][]byte{} // notification path -> frame from the capture
	for _, vf := range wLoadVector(t, "setwatches_reconnect.txt") {
		if !vf.client && vf.conn == 2 {
			if f := wParseFrame(t, vf.b); f.isEvent() {
				vector[wEvent(t, f).Path] = vf.b
			}
		}
	}
	if len(vector) < 3 {
		t.Fatalf("capture has %d notifications, want at least 3", len(vector))
	}
	for _, op := range []jute.OpCode{jute.OpSetWatches2, jute.OpSetWatches} {
		t.Run(op.String(), func(t *testing.T) {
			addr := wServer(t)
			writer := wOpen(t, addr, 30000)
			// The first four are the nodes of setwatches_reconnect.txt.
			for _, p := range []string{"/v", "/v/sw", "/v/sw/a", "/v/sw/same", "/v/sw/gone", "/v/sw/gonec", "/v/sw/quiet"} {
				writer.wMust(wCreateData(p, "1"))
			}
			a := wOpen(t, addr, 30000)
			arm := []wstep{wGetDataW("/v/sw"), wExistsW("/v/sw/new"), wChildrenW("/v/sw/a"), wGetDataW("/v/sw/same"),
				wGetDataW("/v/sw/gone"), wChildrenW("/v/sw/gonec"), wExistsW("/v/sw/never"), wChildrenW("/v/sw/quiet")}
			if op == jute.OpSetWatches2 {
				arm = append(arm, wAddWatch("/v/sw/p", jute.AddWatchPersistent), wAddWatch("/v/sw/r", jute.AddWatchPersistentRecursive))
			}
			var lastZxid int64
			for _, s := range arm {
				_, f := a.wDo(s)
				lastZxid = f.hdr.Zxid
			}
			sess := a.Resp
			a.c.Close()
			writer.wMust(wSet("/v/sw", "2"), wCreate("/v/sw/new"), wCreate("/v/sw/a/kid"),
				wDelete("/v/sw/gone"), wDelete("/v/sw/gonec"))

			b := dialRaw(t, addr)
			resp, err := b.handshake(jute.ConnectRequest{SessionID: sess.SessionID, Passwd: sess.Passwd,
				LastZxidSeen: lastZxid, TimeOut: 30000})
			if err != nil || resp.SessionID != sess.SessionID {
				t.Fatalf("resume: %+v %v", resp, err)
			}
			req := jute.SetWatches2{RelativeZxid: lastZxid,
				DataWatches:  []string{"/v/sw", "/v/sw/same", "/v/sw/gone"},
				ExistWatches: []string{"/v/sw/new", "/v/sw/never"},
				ChildWatches: []string{"/v/sw/a", "/v/sw/gonec", "/v/sw/quiet"}}
			xid := int32(6) // the Java client's choice in the capture
			if op == jute.OpSetWatches2 {
				req.PersistentWatches = []string{"/v/sw/p"}
				req.PersistentRecursiveWatches = []string{"/v/sw/r"}
				b.send(&jute.RequestHeader{Xid: xid, Type: op}, &req)
			} else {
				xid = jute.XidSetWatches // the C and Go clients' choice
				b.send(&jute.RequestHeader{Xid: xid, Type: op}, &jute.SetWatches{RelativeZxid: req.RelativeZxid,
					DataWatches: req.DataWatches, ExistWatches: req.ExistWatches, ChildWatches: req.ChildWatches})
			}
			var got []wev
			for {
				f := b.wNext(10 * time.Second)
				if !f.isEvent() {
					if f.hdr.Xid != xid || f.hdr.Err != jute.OK || len(f.body) != 0 || f.hdr.Zxid != lastZxid+5 {
						t.Fatalf("setWatches reply %+v body %x, want xid %d err 0 zxid %d, no body", f.hdr, f.body, xid, lastZxid+5)
					}
					break
				}
				ev := wEvent(t, f)
				got = append(got, ev)
				if want, ok := vector[ev.Path]; ok && !bytes.Equal(f.raw, want) {
					t.Errorf("notification %x, capture has %x", f.raw, want)
				}
			}
			wCheckEvents(t, "missed events", got, []wev{
				{jute.EventNodeDataChanged, "/v/sw"}, {jute.EventNodeDeleted, "/v/sw/gone"},
				{jute.EventNodeCreated, "/v/sw/new"},
				{jute.EventNodeChildrenChanged, "/v/sw/a"}, {jute.EventNodeDeleted, "/v/sw/gonec"}})

			later := []wstep{wSet("/v/sw/same", "2"), wSet("/v/sw/same", "3"), wCreate("/v/sw/never"),
				wCreate("/v/sw/quiet/k"), wSet("/v/sw", "3"), wCreate("/v/sw/a/kid2"), wSet("/v/sw/new", "2")}
			want := []wev{{jute.EventNodeDataChanged, "/v/sw/same"}, {jute.EventNodeCreated, "/v/sw/never"},
				{jute.EventNodeChildrenChanged, "/v/sw/quiet"}}
			if op == jute.OpSetWatches2 {
				later = append(later, wCreate("/v/sw/p"), wCreate("/v/sw/r"), wCreate("/v/sw/r/x"))
				want = append(want, wev{jute.EventNodeCreated, "/v/sw/p"}, wev{jute.EventNodeCreated, "/v/sw/r"},
					wev{jute.EventNodeCreated, "/v/sw/r/x"})
			}
			writer.wMust(later...)
			wCheckEvents(t, "re-armed watches", b.wBarrier(), want)
		})
	}
}

// wConnectVia opens a go-zookeeper session through a proxy.
func wConnectVia(t *testing.T, p *linkProxy) *zk.Conn {
	t.Helper()
	c, _ := testutil.Connect(t, p.addr(), 8*time.Second)
	return c
}

// wAwaitEvent waits for one event on a go-zookeeper watch channel.
func wAwaitEvent(t *testing.T, ch <-chan zk.Event, want zk.EventType, path string) {
	t.Helper()
	select {
	case ev := <-ch:
		if ev.Type != want || ev.Path != path {
			t.Fatalf("event %+v, want %v on %s", ev, want, path)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no %v on %s within 20s", want, path)
	}
}

// wGoWatches are the go-zookeeper watches of the reconnect tests.
type wGoWatches struct {
	data, created, kids, same <-chan zk.Event
}

// wArmGo sets, on c, a data watch on root, an exist watch on root/new, a
// child watch on root/kids and a data watch on root/same.
func wArmGo(t *testing.T, c *zk.Conn, root string) wGoWatches {
	t.Helper()
	var w wGoWatches
	var err error
	if _, _, w.data, err = c.GetW(root); err != nil {
		t.Fatal(err)
	}
	if _, _, w.created, err = c.ExistsW(root + "/new"); err != nil {
		t.Fatal(err)
	}
	if _, _, w.kids, err = c.ChildrenW(root + "/kids"); err != nil {
		t.Fatal(err)
	}
	if _, _, w.same, err = c.GetW(root + "/same"); err != nil {
		t.Fatal(err)
	}
	return w
}

// wMissEvents changes what wArmGo watches, except root/same.
func wMissEvents(t *testing.T, c *zk.Conn, root string) {
	t.Helper()
	if _, err := c.Set(root, []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(root+"/new", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(root+"/kids/k", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// wCheckGoWatches waits for the missed events, then checks that the
// unchanged watch was re-armed.
func wCheckGoWatches(t *testing.T, w wGoWatches, writer *zk.Conn, root string) {
	t.Helper()
	wAwaitEvent(t, w.data, zk.EventNodeDataChanged, root)
	wAwaitEvent(t, w.created, zk.EventNodeCreated, root+"/new")
	wAwaitEvent(t, w.kids, zk.EventNodeChildrenChanged, root+"/kids")
	select {
	case ev := <-w.same:
		t.Fatalf("unchanged node's watch fired on reconnect: %+v", ev)
	default:
	}
	if _, err := writer.Set(root+"/same", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	wAwaitEvent(t, w.same, zk.EventNodeDataChanged, root+"/same")
}

func wCreateTree(t *testing.T, c *zk.Conn, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// TestGoClientReconnectGetsMissedEvents cuts a go-zookeeper client's TCP
// connection, changes the watched nodes while it cannot reconnect, and
// checks that its automatic reconnect (setWatches 101) delivers them.
func TestGoClientReconnectGetsMissedEvents(t *testing.T) {
	addr := wServer(t)
	writer, _ := testutil.Connect(t, addr, 10*time.Second)
	wCreateTree(t, writer, "/gz", "/gz/kids", "/gz/same")
	p := newLinkProxy(t, addr)
	c := wConnectVia(t, p)
	sid := c.SessionID()
	w := wArmGo(t, c, "/gz")
	p.setCut(true)
	wMissEvents(t, writer, "/gz")
	p.setCut(false)
	wCheckGoWatches(t, w, writer, "/gz")
	if c.SessionID() != sid {
		t.Fatalf("session changed across the reconnect: %x -> %x", sid, c.SessionID())
	}
}

// TestWatchesAcrossServerRestart stops the server, starts a new one on the
// same data directory and port, changes the watched nodes before the client
// can reach it, and checks that the client resumes its session and gets the
// missed events through setWatches.
func TestWatchesAcrossServerRestart(t *testing.T) {
	cfg := wConfig(t)
	srv1 := startServer(t, cfg)
	addr := srv1.Addr().String()
	writer1, _ := testutil.Connect(t, addr, 10*time.Second)
	wCreateTree(t, writer1, "/rs", "/rs/kids", "/rs/same")
	writer1.Close()
	p := newLinkProxy(t, addr)
	c := wConnectVia(t, p)
	sid := c.SessionID()
	w := wArmGo(t, c, "/rs")

	p.setCut(true)
	if err := srv1.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	cfg.ClientPort = srv1.Addr().(*net.TCPAddr).Port
	srv2 := startServer(t, cfg)
	writer2, _ := testutil.Connect(t, srv2.Addr().String(), 10*time.Second)
	wMissEvents(t, writer2, "/rs")
	p.setCut(false)
	wCheckGoWatches(t, w, writer2, "/rs")
	if c.SessionID() != sid {
		t.Fatalf("session changed across the restart: %x -> %x", sid, c.SessionID())
	}
	if _, _, err := c.Get("/rs"); err != nil {
		t.Fatalf("client unusable after the restart: %v", err)
	}
}

// wMntr returns one numeric mntr value.
func wMntr(t *testing.T, addr, key string) int64 {
	t.Helper()
	return testutil.FourLetterNumber(t, addr, "mntr", key+"\t", 10)
}

func wFourLetter(t *testing.T, addr, cmd string) string {
	t.Helper()
	out, err := testutil.FourLetter(addr, cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return out
}

func wHex(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// TestWatchReportsAndLifecycle checks wchs/wchc/wchp shapes and mntr
// zk_watch_count with known watches, and that a connection's watches are
// gone once it closes (dropped TCP or closeSession).
func TestWatchReportsAndLifecycle(t *testing.T) {
	addr := wServer(t)
	wOpen(t, addr, 30000).wMust(wCreate("/l1"), wCreate("/l2"))
	a := wOpen(t, addr, 30000)
	a.wMust(wGetDataW("/l1"), wGetDataW("/l2"), wChildrenW("/l1"))
	if _, f := a.wDo(wExistsW("/l3")); f.hdr.Err != jute.NoNode {
		t.Fatalf("exists /l3: %v", f.hdr.Err)
	}
	b := wOpen(t, addr, 30000)
	b.wMust(wGetDataW("/l1"))
	ida, idb := a.Resp.SessionID, b.Resp.SessionID
	lo, hi := ida, idb
	if uint64(lo) > uint64(hi) {
		lo, hi = hi, lo
	}

	if n := wMntr(t, addr, "zk_watch_count"); n != 5 {
		t.Fatalf("zk_watch_count %d, want 5 (4 data + 1 child)", n)
	}
	checks := []struct{ cmd, want string }{
		{"wchs", "2 connections watching 3 paths\nTotal watches:4\n"},
		{"wchp", "/l1\n\t" + wHex(lo) + "\n\t" + wHex(hi) + "\n/l2\n\t" + wHex(ida) + "\n/l3\n\t" + wHex(ida) + "\n\n"},
	}
	for _, c := range checks {
		if got := wFourLetter(t, addr, c.cmd); got != c.want {
			t.Fatalf("%s = %q, want %q", c.cmd, got, c.want)
		}
	}
	blockA := wHex(ida) + "\n\t/l1\n\t/l2\n\t/l3\n"
	blockB := wHex(idb) + "\n\t/l1\n"
	wantWchc := blockA + blockB + "\n"
	if lo == idb {
		wantWchc = blockB + blockA + "\n"
	}
	if got := wFourLetter(t, addr, "wchc"); got != wantWchc {
		t.Fatalf("wchc = %q, want %q", got, wantWchc)
	}

	a.c.Close() // dropped without closeSession: the session lives on, its watches do not
	testutil.Eventually(t, 10*time.Second, "a's watches dropped", func() bool {
		return wMntr(t, addr, "zk_watch_count") == 1
	})
	for _, c := range []struct{ cmd, want string }{
		{"wchs", "1 connections watching 1 paths\nTotal watches:1\n"},
		{"wchc", blockB + "\n"},
		{"wchp", "/l1\n\t" + wHex(idb) + "\n\n"},
	} {
		if got := wFourLetter(t, addr, c.cmd); got != c.want {
			t.Fatalf("after a's close, %s = %q, want %q", c.cmd, got, c.want)
		}
	}

	if _, f := b.wDo(wstep{jute.OpCloseSession, nil}); f.hdr.Err != jute.OK {
		t.Fatalf("closeSession: %v", f.hdr.Err)
	}
	testutil.Eventually(t, 10*time.Second, "b's watches dropped", func() bool {
		return wMntr(t, addr, "zk_watch_count") == 0
	})
	if got := wFourLetter(t, addr, "wchs"); got != "0 connections watching 0 paths\nTotal watches:0\n" {
		t.Fatalf("wchs at the end = %q", got)
	}
}

// TestSlowConsumerDisconnected has a client watch everything and never read
// while another session causes far more notification bytes than the
// outbox tolerates (64 MiB): the slow client is dropped once, counted once
// in zk_slow_client_disconnects, its watches are released, and the server
// keeps serving.
func TestSlowConsumerDisconnected(t *testing.T) {
	if testing.Short() {
		t.Skip("moves ~100 MB through the server")
	}
	addr := startServer(t, wConfig(t)).Addr().String()

	// Nine nodes with ~100 KB names: one multi setting all of them is just
	// under the 1 MiB frame limit and queues nine ~100 KB notifications.
	const nodes, nameLen = 9, 100_000
	writer := wOpen(t, addr, 30000)
	writer.wMust(wCreate("/slow"))
	var paths []string
	for i := 0; i < nodes; i++ {
		p := fmt.Sprintf("/slow/%d%s", i, strings.Repeat("x", nameLen))
		paths = append(paths, p)
		writer.wMust(wCreate(p))
	}
	var ops []wstep
	for _, p := range paths {
		ops = append(ops, wSet(p, ""))
	}
	burst := wMulti(ops...)

	slow := wOpen(t, addr, 30000)
	slow.wMust(wAddWatch("/slow", jute.AddWatchPersistentRecursive))
	before := wMntr(t, addr, "zk_slow_client_disconnects")
	// ~900 KB of notifications per burst; 64 MiB plus socket buffers takes
	// about 80 bursts.
	dropped := false
	for i := 0; i < 200 && !dropped; i++ {
		writer.wMust(burst)
		if i%8 == 7 {
			dropped = wMntr(t, addr, "zk_slow_client_disconnects") > before
		}
	}
	if !dropped {
		t.Fatal("the slow client was not disconnected after 200 bursts (~180 MB)")
	}
	for i := 0; i < 5; i++ {
		writer.wMust(burst) // later events must not count the client again
	}
	if n := wMntr(t, addr, "zk_slow_client_disconnects"); n != before+1 {
		t.Fatalf("zk_slow_client_disconnects went from %d to %d, want one more", before, n)
	}
	testutil.Eventually(t, 10*time.Second, "slow client's watch released", func() bool {
		return wMntr(t, addr, "zk_watch_count") == 0
	})
	// The slow client's socket ends (after what was already buffered).
	slow.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, slow.c)
	t.Logf("drained %d bytes from the slow client's socket: %v", n, err)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the slow client's connection was not closed")
	}
	// Others are still served.
	writer.wMust(wSet("/slow", "still here"))
	c, _ := testutil.Connect(t, addr, 10*time.Second)
	if data, _, err := c.Get("/slow"); err != nil || string(data) != "still here" {
		t.Fatalf("new client: %q %v", data, err)
	}
}
