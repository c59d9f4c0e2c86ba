package jute_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// The golden replay reads the captures of a real ZooKeeper 3.8.0 server kept
// in testdata/vectors (copied from the project's spec; see its README.md).
// Every client frame is decoded as RequestHeader + the opcode's request
// record, every server frame as ReplyHeader + the record the matching request
// calls for, and each is re-encoded and compared byte for byte.

// vectorDir holds the capture files.
const vectorDir = "testdata/vectors"

// vectorFrame is one frame of a capture file.
type vectorFrame struct {
	line      int    // 1-based line number in the file
	client    bool   // C> (client to server) or S< (server to client)
	conn      int    // TCP connection number from the "#   [cN]" decode comment
	raw       []byte // the whole frame including its length prefix
	truncated int    // for "#C> TRUNCATED": the frame's full size; raw is its first bytes
}

var (
	decodeCommentRE = regexp.MustCompile(`^#   \[c(\d+)\]`)
	truncatedRE     = regexp.MustCompile(`^#C> TRUNCATED frame of (\d+) bytes; first \d+ bytes: ([0-9a-f]+)$`)
)

// parseVectorFile reads the framed capture at path. Each frame must be
// followed by a decode comment naming its connection.
func parseVectorFile(tb testing.TB, path string) []vectorFrame {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var frames []vectorFrame
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fr, ok, err := parseVectorLine(line, n)
		if err != nil {
			tb.Fatalf("%s:%d: %v", path, n, err)
		}
		if ok {
			frames = append(frames, fr)
			continue
		}
		if m := decodeCommentRE.FindStringSubmatch(line); m != nil && len(frames) > 0 && frames[len(frames)-1].conn == 0 {
			frames[len(frames)-1].conn, _ = strconv.Atoi(m[1])
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	for _, fr := range frames {
		if fr.conn == 0 {
			tb.Fatalf("%s:%d: frame has no [cN] decode comment", path, fr.line)
		}
	}
	return frames
}

// parseVectorLine recognises a frame line (C>, S< or a truncated C> comment).
func parseVectorLine(line string, n int) (vectorFrame, bool, error) {
	if m := truncatedRE.FindStringSubmatch(line); m != nil {
		size, err := strconv.Atoi(m[1])
		if err != nil {
			return vectorFrame{}, false, fmt.Errorf("truncated size: %w", err)
		}
		raw, err := hex.DecodeString(m[2])
		if err != nil {
			return vectorFrame{}, false, fmt.Errorf("truncated hex: %w", err)
		}
		return vectorFrame{line: n, client: true, raw: raw, truncated: size}, true, nil
	}
	var client bool
	switch {
	case strings.HasPrefix(line, "C> "):
		client = true
	case strings.HasPrefix(line, "S< "):
	default:
		return vectorFrame{}, false, nil
	}
	raw, err := hex.DecodeString(strings.TrimSpace(line[3:]))
	if err != nil {
		return vectorFrame{}, false, fmt.Errorf("frame hex: %w", err)
	}
	return vectorFrame{line: n, client: client, raw: raw}, true, nil
}

// vectorFiles lists the framed capture files.
func vectorFiles(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// replayStats counts what a replay saw.
type replayStats struct {
	Frames        int // client and server frames replayed (excluding truncated)
	Requests      int // client frames after the ConnectRequest
	Notifications int // xid -1 server frames
	Pings         int // xid -2 server frames
	ErrorReplies  int // replies with err != 0
	UnknownOps    int // requests with an opcode NewRequest rejects
	Oversized     int // truncated frames longer than the frame limit
	MultiResults  int // results inside multi / multiRead replies
}

// pendingReq is a request awaiting its reply.
type pendingReq struct {
	op  jute.OpCode
	req jute.Record
}

// connState is one TCP connection's replay state.
type connState struct {
	connect  *jute.ConnectRequest
	answered bool // ConnectResponse seen
	pending  map[int32][]pendingReq
}

// replayer replays the frames of one file.
type replayer struct {
	conns map[int]*connState
	stats replayStats
	ops   map[jute.OpCode]int // requests replayed per opcode
}

func newReplayer() *replayer {
	return &replayer{conns: map[int]*connState{}, ops: map[jute.OpCode]int{}}
}

func (r *replayer) conn(n int) *connState {
	c, ok := r.conns[n]
	if !ok {
		c = &connState{pending: map[int32][]pendingReq{}}
		r.conns[n] = c
	}
	return c
}

// frame replays one frame.
func (r *replayer) frame(f vectorFrame) error {
	c := r.conn(f.conn)
	if f.truncated != 0 {
		return r.oversized(f)
	}
	payload, err := jute.ReadFrame(bytes.NewReader(f.raw), jute.DefaultMaxBuffer, nil)
	if err != nil {
		return fmt.Errorf("read frame: %w", err)
	}
	if len(payload) != len(f.raw)-4 {
		return fmt.Errorf("frame length %d but %d payload bytes captured", len(payload), len(f.raw)-4)
	}
	r.stats.Frames++
	switch {
	case f.client && c.connect == nil:
		return r.connectRequest(c, f.raw, payload)
	case f.client:
		return r.request(c, f.raw, payload)
	case !c.answered:
		return r.connectResponse(c, f.raw, payload)
	default:
		return r.reply(c, f.raw, payload)
	}
}

// oversized checks a frame too large to keep: its declared length must be
// beyond jute.maxbuffer and ReadFrame must refuse it.
func (r *replayer) oversized(f vectorFrame) error {
	_, err := jute.ReadFrame(bytes.NewReader(f.raw), jute.DefaultMaxBuffer, nil)
	if !errors.Is(err, jute.ErrFrameTooLarge) {
		return fmt.Errorf("oversized frame of %d bytes: ReadFrame error = %v, want ErrFrameTooLarge", f.truncated, err)
	}
	n, err := jute.ReadFrameLength(bytes.NewReader(f.raw))
	if err != nil || int(n) != f.truncated-4 {
		return fmt.Errorf("oversized frame: length prefix %d (err %v), comment says %d", n, err, f.truncated-4)
	}
	r.stats.Oversized++
	return nil
}

func (r *replayer) connectRequest(c *connState, raw, payload []byte) error {
	var req jute.ConnectRequest
	if err := jute.Decode(payload, &req); err != nil {
		return fmt.Errorf("ConnectRequest: %w", err)
	}
	if req.HasReadOnly != (len(payload) == 45) {
		return fmt.Errorf("ConnectRequest of %d bytes: HasReadOnly = %v", len(payload), req.HasReadOnly)
	}
	c.connect = &req
	return sameFrame(raw, &req)
}

func (r *replayer) connectResponse(c *connState, raw, payload []byte) error {
	if c.connect == nil {
		return errors.New("server frame before any ConnectRequest")
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(payload, &resp); err != nil {
		return fmt.Errorf("ConnectResponse: %w", err)
	}
	if resp.HasReadOnly != c.connect.HasReadOnly {
		return fmt.Errorf("ConnectResponse HasReadOnly = %v, request had %v", resp.HasReadOnly, c.connect.HasReadOnly)
	}
	c.answered = true
	return sameFrame(raw, &resp)
}

func (r *replayer) request(c *connState, raw, payload []byte) error {
	r.stats.Requests++
	d := jute.NewDecoder(payload)
	var h jute.RequestHeader
	h.Decode(d)
	if err := d.Err(); err != nil {
		return fmt.Errorf("RequestHeader: %w", err)
	}
	r.ops[h.Type]++
	if h.Xid == jute.XidAuth && h.Type != jute.OpAuth {
		return fmt.Errorf("xid -4 with opcode %v", h.Type)
	}
	rec := jute.NewRequest(h.Type)
	if rec == nil {
		// Not a client opcode: the server must answer Unimplemented.
		r.stats.UnknownOps++
		c.pending[h.Xid] = append(c.pending[h.Xid], pendingReq{op: h.Type})
		return sameFrame(raw, &h)
	}
	rec.Decode(d)
	if err := d.Finish(true); err != nil {
		return fmt.Errorf("%v request: %w", h.Type, err)
	}
	if h.Type != jute.OpPing { // ping replies always carry xid -2
		c.pending[h.Xid] = append(c.pending[h.Xid], pendingReq{op: h.Type, req: rec})
	}
	return sameFrame(raw, &h, rec)
}

func (r *replayer) reply(c *connState, raw, payload []byte) error {
	d := jute.NewDecoder(payload)
	var h jute.ReplyHeader
	h.Decode(d)
	if err := d.Err(); err != nil {
		return fmt.Errorf("ReplyHeader: %w", err)
	}
	var rec jute.Record
	var req pendingReq
	switch h.Xid {
	case jute.XidNotification:
		r.stats.Notifications++
		if h.Err != jute.OK {
			return fmt.Errorf("notification with err %v", h.Err)
		}
		rec = &jute.WatcherEvent{}
	case jute.XidPing:
		r.stats.Pings++
		rec = &jute.Empty{}
	default:
		q := c.pending[h.Xid]
		if len(q) == 0 {
			return fmt.Errorf("reply xid %d matches no request", h.Xid)
		}
		req, c.pending[h.Xid] = q[0], q[1:]
		var err error
		if rec, err = r.replyRecord(h, req); err != nil {
			return err
		}
	}
	rec.Decode(d)
	if err := d.Finish(true); err != nil {
		return fmt.Errorf("xid %d %v reply: %w", h.Xid, req.op, err)
	}
	if err := r.checkMulti(h, req, rec); err != nil {
		return err
	}
	return sameFrame(raw, &h, rec)
}

// replyRecord picks the record a reply to req must carry.
func (r *replayer) replyRecord(h jute.ReplyHeader, req pendingReq) (jute.Record, error) {
	if req.req == nil {
		if h.Err != jute.Unimplemented {
			return nil, fmt.Errorf("unknown opcode %d answered with %v, want Unimplemented", int32(req.op), h.Err)
		}
	}
	if h.Err != jute.OK {
		r.stats.ErrorReplies++
		if req.op == jute.OpMultiRead && h.Err == jute.MarshallingError {
			return &jute.MultiResponse{}, nil // ZooKeeper sends only the end marker
		}
		return &jute.Empty{}, nil
	}
	rec := jute.NewResponse(req.op)
	if rec == nil {
		return nil, fmt.Errorf("no response record for %v", req.op)
	}
	return rec, nil
}

// checkMulti verifies a multi reply's results line up with the request's ops.
func (r *replayer) checkMulti(h jute.ReplyHeader, req pendingReq, rec jute.Record) error {
	resp, ok := rec.(*jute.MultiResponse)
	if !ok {
		return nil
	}
	if h.Err != jute.OK {
		if len(resp.Results) != 0 {
			return fmt.Errorf("rejected multi carries %d results", len(resp.Results))
		}
		return nil
	}
	ops := req.req.(*jute.MultiRequest).Ops
	if len(resp.Results) != len(ops) {
		return fmt.Errorf("multi of %d ops answered with %d results", len(ops), len(resp.Results))
	}
	for i, res := range resp.Results {
		r.stats.MultiResults++
		if res.Type != jute.OpError && !multiResultTypeOK(ops[i].Type, res.Type) {
			return fmt.Errorf("multi op %d of type %v answered with result type %v", i, ops[i].Type, res.Type)
		}
	}
	return nil
}

// multiResultTypeOK reports whether a success result of type got may answer
// an op of type op. ZooKeeper 3.8 answers create2 with a plain create result
// (3.9 with create2); createContainer and createTTL get create2 results.
func multiResultTypeOK(op, got jute.OpCode) bool {
	switch op {
	case jute.OpCreate2:
		return got == jute.OpCreate || got == jute.OpCreate2
	case jute.OpCreateContainer, jute.OpCreateTTL:
		return got == jute.OpCreate2
	}
	return got == op
}

// sameFrame re-encodes recs as one frame and compares it with raw.
func sameFrame(raw []byte, recs ...jute.Record) error {
	got := jute.AppendFrame(nil, recs...)
	if !bytes.Equal(got, raw) {
		return fmt.Errorf("re-encoded frame differs\n got %x\nwant %x", got, raw)
	}
	return nil
}

// replayWant is what each capture must contain: the counts are taken from
// the files (frame lines, xid -1 / -2 replies, header err != 0), so a parser
// that skipped frames or a replay that dropped them fails.
var replayWant = map[string]replayStats{
	"acl_digest.txt":               {Frames: 28, Requests: 12, ErrorReplies: 3},
	"auth_failed.txt":              {Frames: 8, Requests: 2, ErrorReplies: 2},
	"c_client.txt":                 {Frames: 23, Requests: 10, Notifications: 1, ErrorReplies: 1},
	"close_session_ephemeral.txt":  {Frames: 8, Requests: 3},
	"connect_close.txt":            {Frames: 4, Requests: 1},
	"create_modes.txt":             {Frames: 20, Requests: 9, ErrorReplies: 3},
	"delete_errors.txt":            {Frames: 12, Requests: 5, ErrorReplies: 3},
	"exists_missing.txt":           {Frames: 11, Requests: 4, Notifications: 1, ErrorReplies: 1},
	"getchildren.txt":              {Frames: 13, Requests: 5, Notifications: 1, ErrorReplies: 1},
	"getdata_watch_setdata.txt":    {Frames: 13, Requests: 5, Notifications: 1, ErrorReplies: 1},
	"multi.txt":                    {Frames: 8, Requests: 3, MultiResults: 7},
	"raw_edge_cases.txt":           {Frames: 46, Requests: 18, Pings: 1, ErrorReplies: 5, UnknownOps: 1, Oversized: 1, MultiResults: 3},
	"setwatches_reconnect.txt":     {Frames: 28, Requests: 10, Notifications: 4, ErrorReplies: 1},
	"sync_ping.txt":                {Frames: 10, Requests: 4, Pings: 2},
	"zkcli_addwatch_recursive.txt": {Frames: 32, Requests: 12, Notifications: 6, ErrorReplies: 1},
	"zkcli_create_modes.txt":       {Frames: 26, Requests: 12},
	"zkcli_misc.txt":               {Frames: 34, Requests: 16},
}

// replayCovers lists the opcodes the captures must exercise between them.
var replayCovers = []jute.OpCode{
	jute.OpCreate, jute.OpDelete, jute.OpExists, jute.OpGetData, jute.OpSetData,
	jute.OpGetACL, jute.OpSetACL, jute.OpGetChildren, jute.OpSync, jute.OpPing,
	jute.OpGetChildren2, jute.OpMulti, jute.OpCreate2, jute.OpCheckWatches,
	jute.OpRemoveWatches, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpMultiRead,
	jute.OpAuth, jute.OpGetEphemerals, jute.OpGetAllChildrenNumber, jute.OpSetWatches2,
	jute.OpAddWatch, jute.OpWhoAmI, jute.OpCloseSession,
}

func TestGoldenVectors(t *testing.T) {
	files := vectorFiles(t)
	if len(files) != len(replayWant) {
		t.Errorf("found %d capture files in %s, want %d", len(files), vectorDir, len(replayWant))
	}
	total := 0
	covered := map[jute.OpCode]int{}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			want, ok := replayWant[name]
			if !ok {
				t.Fatalf("no expectations for %s: add it to replayWant", name)
			}
			r := newReplayer()
			for _, f := range parseVectorFile(t, path) {
				if err := r.frame(f); err != nil {
					t.Errorf("line %d [c%d]: %v", f.line, f.conn, err)
				}
			}
			if r.stats != want {
				t.Errorf("replay stats\n got %+v\nwant %+v", r.stats, want)
			}
			total += r.stats.Frames
			for op, n := range r.ops {
				covered[op] += n
			}
		})
	}
	if total < 300 {
		t.Errorf("replayed %d frames in all, want at least 300", total)
	}
	for _, op := range replayCovers {
		if covered[op] == 0 {
			t.Errorf("no capture exercises %v", op)
		}
	}
}

// TestReplayerRejects shows the replay can fail: each case is a small
// connection whose last frame is wrong in one way.
func TestReplayerRejects(t *testing.T) {
	const (
		connReq  = "0000002c0000000000000000000000000000753000000000000000000000001000000000000000000000000000000000"
		connResp = "000000240000000000007530010000116dd50013000000101cdb6bc63b04a03a5e675fa2a5e8d39b"
		getData  = "000000130000000400000004000000062f762f72617700" // xid 4 getData /v/raw
	)
	tests := []struct {
		name   string
		frames []string // "C>hex" or "S<hex"
		want   string   // substring of the error
	}{
		{"non-canonical bool", []string{"C>" + connReq, "S<" + connResp,
			"C>000000130000000400000004000000062f762f72617702"}, "differs"},
		{"trailing request bytes", []string{"C>" + connReq, "S<" + connResp,
			"C>00000014000000040000000400000006" + "2f762f7261770000"}, "trailing"},
		{"reply to unknown xid", []string{"C>" + connReq, "S<" + connResp, "C>" + getData,
			"S<0000001000000005000000000000006a00000000"}, "matches no request"},
		{"error reply with body", []string{"C>" + connReq, "S<" + connResp, "C>" + getData,
			"S<0000001400000004000000000000006affffff9b00000000"}, "trailing"},
		{"unknown opcode answered OK", []string{"C>" + connReq, "S<" + connResp,
			"C>000000080000006300000032", "S<0000001000000063000000000000006a00000000"}, "Unimplemented"},
		{"short getData reply", []string{"C>" + connReq, "S<" + connResp, "C>" + getData,
			"S<0000001800000004000000000000006a00000000ffffffff00000000"}, "short buffer"},
		{"response readOnly byte not asked for", []string{"C>" + connReq, "S<" + connResp[:6] + "25" + connResp[8:] + "00"}, "HasReadOnly"},
		{"server speaks first", []string{"S<" + connResp}, "before any ConnectRequest"},
		{"length prefix too small", []string{"C>" + "0000002b" + connReq[8:]}, "payload bytes captured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplayer()
			var err error
			for i, fr := range tt.frames {
				raw, herr := hex.DecodeString(fr[2:])
				if herr != nil {
					t.Fatal(herr)
				}
				err = r.frame(vectorFrame{line: i + 1, client: fr[0] == 'C', conn: 1, raw: raw})
				if err != nil && i != len(tt.frames)-1 {
					t.Fatalf("frame %d: unexpected error %v", i, err)
				}
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("last frame error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
