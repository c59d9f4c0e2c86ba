package jute_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// maxErrorAllocs bounds the allocations a rejected decode may make. They are
// a fixed handful (the Decoder, the record and sub-record under decode, the
// wrapped error with its context; eight under the race detector) and never a
// count that grows with the hostile length; maxErrorBytes is the guard on
// size. The bound leaves room for the odd allocation the runtime makes on its
// own while the count runs, which AllocsPerRun cannot tell from ours.
const maxErrorAllocs = 12

// maxErrorBytes bounds the bytes a rejected decode may allocate.
const maxErrorBytes = 1024

// bytesPerRun reports the average bytes f allocates per call.
func bytesPerRun(runs int, f func()) uint64 {
	var before, after runtime.MemStats
	f() // warm up
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// fewestAllocs reports the lowest of tries AllocsPerRun counts of f, so that
// an allocation made elsewhere in the process during one count is not
// charged to f.
func fewestAllocs(tries int, f func()) float64 {
	fewest := testing.AllocsPerRun(100, f)
	for range tries - 1 {
		fewest = min(fewest, testing.AllocsPerRun(100, f))
	}
	return fewest
}

// TestHostileLengths feeds lengths and vector counts no honest peer would
// send; each must fail with ErrBadLength, cheaply and without a panic.
func TestHostileLengths(t *testing.T) {
	stat := make([]byte, jute.StatSize)
	tests := []struct {
		name string
		in   []byte
		rec  func() jute.Record
	}{
		{"buffer -2", mustHex(t, "fffffffe 00000000"), func() jute.Record { return &jute.SASLToken{} }},
		{"buffer max int", mustHex(t, "7fffffff 00000000"), func() jute.Record { return &jute.SASLToken{} }},
		{"buffer min int", mustHex(t, "80000000"), func() jute.Record { return &jute.SASLToken{} }},
		{"buffer one too long", mustHex(t, "00000005 01020304"), func() jute.Record { return &jute.SASLToken{} }},
		{"string -2", mustHex(t, "fffffffe"), func() jute.Record { return &jute.PathRequest{} }},
		{"string max int", mustHex(t, "7fffffff 2f"), func() jute.Record { return &jute.PathRequest{} }},
		{"getData data max int", append(mustHex(t, "7fffffff"), stat...), func() jute.Record { return &jute.GetDataResponse{} }},
		{"create data max int", mustHex(t, "00000001 2f 7fffffff 00000000 00000000"), func() jute.Record { return &jute.CreateRequest{} }},
		{"string vector max int", mustHex(t, "7fffffff 00000000"), func() jute.Record { return &jute.GetChildrenResponse{} }},
		{"string vector -2", mustHex(t, "fffffffe"), func() jute.Record { return &jute.GetChildrenResponse{} }},
		{"string vector too long for its bytes", mustHex(t, "00000003 00000000 00000000"), func() jute.Record { return &jute.PathsResponse{} }},
		{"ACL vector max int", append(mustHex(t, "7fffffff"), stat...), func() jute.Record { return &jute.GetACLResponse{} }},
		{"ACL vector in create", mustHex(t, "00000001 2f ffffffff 7fffffff 00000000"), func() jute.Record { return &jute.CreateRequest{} }},
		{"ACL vector -5", mustHex(t, "00000001 2f fffffffb 00000000"), func() jute.Record { return &jute.SetACLRequest{} }},
		{"clientInfo vector max int", mustHex(t, "7fffffff 00000000 00000000"), func() jute.Record { return &jute.WhoAmIResponse{} }},
		{"setWatches vector max int", mustHex(t, "0000000000000000 7fffffff 00000000"), func() jute.Record { return &jute.SetWatches{} }},
		{"setWatches2 last vector max int", mustHex(t, "0000000000000000 00000000 00000000 00000000 00000000 7fffffff"),
			func() jute.Record { return &jute.SetWatches2{} }},
		{"connect passwd max int", mustHex(t, "00000000 0000000000000000 00000000 0000000000000000 7fffffff 00"),
			func() jute.Record { return &jute.ConnectRequest{} }},
		{"multi op path max int", mustHex(t, "00000004 00 ffffffff 7fffffff"), func() jute.Record { return &jute.MultiRequest{} }},
		{"multi result children max int", mustHex(t, "00000008 00 00000000 7fffffff ffffffff 01 ffffffff"),
			func() jute.Record { return &jute.MultiResponse{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := jute.Decode(tt.in, tt.rec())
			if !errors.Is(err, jute.ErrBadLength) {
				t.Fatalf("Decode(%x) error = %v, want ErrBadLength", tt.in, err)
			}
			decode := func() { _ = jute.Decode(tt.in, tt.rec()) }
			if n := fewestAllocs(3, decode); n > maxErrorAllocs {
				t.Errorf("rejecting %x allocates %.0f times, want at most %d", tt.in, n, maxErrorAllocs)
			}
			if n := bytesPerRun(100, decode); n > maxErrorBytes {
				t.Errorf("rejecting %x allocates %d bytes, want at most %d", tt.in, n, maxErrorBytes)
			}
		})
	}
}

// TestNullLengthsAccepted checks that -1, unlike other negative lengths,
// is a valid null buffer, string and vector.
func TestNullLengthsAccepted(t *testing.T) {
	tests := []struct {
		name string
		in   string
		rec  jute.Record
	}{
		{"null buffer", "ffffffff", &jute.SASLToken{}},
		{"null string", "ffffffff", &jute.PathRequest{}},
		{"null string vector", "ffffffff", &jute.GetChildrenResponse{}},
		{"null ACL vector", "00000001 2f ffffffff ffffffff 00000000", &jute.CreateRequest{}},
		{"null clientInfo vector", "ffffffff", &jute.WhoAmIResponse{}},
	}
	for _, tt := range tests {
		if err := jute.Decode(mustHex(t, tt.in), tt.rec); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// TestDecoderStickyError checks that after the first error every getter
// returns a zero value and the error does not change.
func TestDecoderStickyError(t *testing.T) {
	d := jute.NewDecoder(mustHex(t, "00000001 7fffffff 00000002 0000000000000003 01"))
	if v := d.Int(); v != 1 {
		t.Fatalf("Int = %d", v)
	}
	if b := d.Buffer(); b != nil || d.Err() == nil {
		t.Fatalf("Buffer = %x, err %v", b, d.Err())
	}
	first := d.Err()
	if v, l, s, b, bf, ss := d.Int(), d.Long(), d.String(), d.Bool(), d.Buffer(), d.Strings(); v != 0 || l != 0 || s != "" || b || bf != nil || ss != nil {
		t.Errorf("getters after error returned %d %d %q %v %x %q", v, l, s, b, bf, ss)
	}
	d.Fail(errors.New("later"))
	if d.Err() != first {
		t.Errorf("error changed from %v to %v", first, d.Err())
	}
	if err := d.Finish(false); err != first {
		t.Errorf("Finish = %v, want %v", err, first)
	}
}

func TestDecoderAccessors(t *testing.T) {
	d := jute.NewDecoder(mustHex(t, "00000001 02 03"))
	_ = d.Int()
	if d.Offset() != 4 || d.Remaining() != 2 || !bytes.Equal(d.Rest(), []byte{2, 3}) {
		t.Errorf("offset %d remaining %d rest %x", d.Offset(), d.Remaining(), d.Rest())
	}
	if err := d.Finish(false); err != nil {
		t.Errorf("Finish(false) with trailing bytes: %v", err)
	}
	if err := d.Finish(true); err == nil {
		t.Error("Finish(true) with trailing bytes: no error")
	}
	first, second := d.Bool(), d.Bool()
	if !first || !second || d.Remaining() != 0 {
		t.Error("non-zero bytes must read as true")
	}
	if d.Bool() || !errors.Is(d.Err(), jute.ErrShortBuffer) {
		t.Errorf("Bool past the end: err %v", d.Err())
	}
	// A decoded buffer is a copy: changing the input does not change it.
	in := mustHex(t, "00000002 0a0b")
	b := jute.NewDecoder(in).Buffer()
	in[4] = 0xff
	if b[0] != 0x0a {
		t.Error("Buffer aliases its input")
	}
}

// truncationOK reports the strict prefixes of a record's encoding that are
// themselves valid: only the ConnectRequest/Response without their optional
// trailing readOnly byte.
func truncationOK(rec jute.Record, full, n int) bool {
	switch r := rec.(type) {
	case *jute.ConnectRequest:
		return r.HasReadOnly && n == full-1
	case *jute.ConnectResponse:
		return r.HasReadOnly && n == full-1
	}
	return false
}

// TestTruncatedRecords decodes every strict prefix of every record: all
// must fail (bar the optional readOnly byte) and none may panic.
func TestTruncatedRecords(t *testing.T) {
	for _, tc := range recordCases() {
		t.Run(tc.name, func(t *testing.T) {
			b := jute.Encode(tc.rec)
			for n := 0; n < len(b); n++ {
				err := jute.Decode(b[:n:n], tc.empty())
				if ok := truncationOK(tc.rec, len(b), n); ok != (err == nil) {
					t.Errorf("prefix of %d/%d bytes: err = %v", n, len(b), err)
				}
			}
		})
	}
}

// TestTruncatedVectorFrames cuts the body of every captured request short;
// every cut must fail to decode.
func TestTruncatedVectorFrames(t *testing.T) {
	checked := 0
	for _, req := range capturedRequests(t) {
		d := jute.NewDecoder(req.payload)
		var h jute.RequestHeader
		h.Decode(d)
		body := d.Rest()
		if jute.NewRequest(h.Type) == nil {
			continue
		}
		for n := 0; n < len(body); n++ {
			if err := jute.Decode(body[:n:n], jute.NewRequest(h.Type)); err == nil {
				t.Errorf("%s: %v body cut to %d/%d bytes decoded", req.where, h.Type, n, len(body))
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Errorf("checked %d truncations, want at least 1000", checked)
	}
}

// capturedFrame is one payload from the captures.
type capturedFrame struct {
	where   string // file:line
	payload []byte
}

// capturedRequests returns the payload of every captured client frame after
// the first (ConnectRequest) of its connection.
func capturedRequests(tb testing.TB) []capturedFrame {
	var out []capturedFrame
	for _, path := range vectorFiles(tb) {
		seen := map[int]bool{}
		for _, f := range parseVectorFile(tb, path) {
			if !f.client || f.truncated != 0 {
				continue
			}
			if seen[f.conn] {
				out = append(out, capturedFrame{fmt.Sprintf("%s:%d", path, f.line), f.raw[4:]})
			}
			seen[f.conn] = true
		}
	}
	return out
}

// lengthReader yields a 4-byte length prefix followed by endless zeros and
// counts how much was read.
type lengthReader struct {
	hdr  []byte
	read int
}

func (r *lengthReader) Read(p []byte) (int, error) {
	n := copy(p, r.hdr)
	r.hdr = r.hdr[n:]
	for i := n; i < len(p); i++ {
		p[i] = 0
	}
	r.read += len(p)
	return len(p), nil
}

func TestReadFrameLimits(t *testing.T) {
	const max = jute.DefaultMaxBuffer
	tests := []struct {
		name    string
		length  string
		wantLen int
		wantErr error
	}{
		{"zero", "00000000", 0, nil},
		{"one", "00000001", 1, nil},
		{"exactly max", "000fffff", max, nil},
		{"max+1", "00100000", 0, jute.ErrFrameTooLarge},
		{"2 MiB", "0020001a", 0, jute.ErrFrameTooLarge},
		{"-1", "ffffffff", 0, jute.ErrFrameTooLarge},
		{"min int", "80000000", 0, jute.ErrFrameTooLarge},
		{"max int", "7fffffff", 0, jute.ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &lengthReader{hdr: mustHex(t, tt.length)}
			got, err := jute.ReadFrame(r, max, nil)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("ReadFrame error = %v, want %v", err, tt.wantErr)
			}
			if len(got) != tt.wantLen {
				t.Errorf("payload of %d bytes, want %d", len(got), tt.wantLen)
			}
			if tt.wantErr != nil && r.read > 4 {
				t.Errorf("read %d bytes past a rejected length", r.read-4)
			}
			n, _ := jute.ReadFrameLength(bytes.NewReader(mustHex(t, tt.length)))
			if _, err := jute.ReadFramePayload(bytes.NewReader(nil), n, max, nil); tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("ReadFramePayload(%d) error = %v, want %v", n, err, tt.wantErr)
			}
			if tt.wantErr != nil {
				read := func() { _, _ = jute.ReadFramePayload(bytes.NewReader(nil), n, max, nil) }
				if b := bytesPerRun(20, read); b > maxErrorBytes {
					t.Errorf("rejecting length %d allocates %d bytes", n, b)
				}
			}
		})
	}
}

func TestReadFrameShortInput(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"nothing", "", io.EOF},
		{"half a length", "0000", io.ErrUnexpectedEOF},
		{"payload cut short", "00000004 0102", io.ErrUnexpectedEOF},
		{"length then nothing", "00000004", io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		_, err := jute.ReadFrame(bytes.NewReader(mustHex(t, tt.in)), jute.DefaultMaxBuffer, nil)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: error = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestReadFrameReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 64)
	in := jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpPing})
	got, err := jute.ReadFrame(bytes.NewReader(in), jute.DefaultMaxBuffer, buf)
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &buf[:1][0] {
		t.Error("payload not read into the supplied buffer")
	}
	if !bytes.Equal(got, in[4:]) {
		t.Errorf("payload %x, want %x", got, in[4:])
	}
	r := bytes.NewReader(in)
	if n := testing.AllocsPerRun(100, func() {
		r.Reset(in)
		_, _ = jute.ReadFrame(r, jute.DefaultMaxBuffer, buf)
	}); n > 1 {
		t.Errorf("ReadFrame into a large enough buffer allocates %.0f times, want at most 1 (the length)", n)
	}
}

func TestAppendFrame(t *testing.T) {
	dst := []byte{0xaa}
	got := jute.AppendFrame(dst, &jute.ReplyHeader{Xid: 1, Zxid: 2}, &jute.CreateResponse{Path: "/a"})
	want := mustHex(t, "aa 00000016 00000001 0000000000000002 00000000 00000002 2f61")
	if !bytes.Equal(got, want) {
		t.Errorf("AppendFrame\n got %x\nwant %x", got, want)
	}
	if got := jute.AppendFrame(nil); !bytes.Equal(got, []byte{0, 0, 0, 0}) {
		t.Errorf("empty frame %x", got)
	}
}

// TestFirstNullString checks that the decoder remembers which ustring was
// the first null one, counting ustrings in decoding order.
func TestFirstNullString(t *testing.T) {
	tests := []struct {
		name string
		in   string
		rec  jute.Record
		idx  int
		null bool
	}{
		{"no null", "00000001 2f 00", &jute.PathWatchRequest{}, 0, false},
		{"empty is not null", "00000000 00", &jute.PathWatchRequest{}, 0, false},
		{"null path", "ffffffff 00", &jute.PathWatchRequest{}, 0, true},
		{"null ACL id", "00000001 2f 00000001 0000001f 00000005 776f726c64 ffffffff 00000000",
			&jute.SetACLRequest{}, 2, true},
		{"first of two nulls (data buffers do not count)", "00000001 2f ffffffff 00000001 0000001f ffffffff ffffffff 00000000",
			&jute.CreateRequest{}, 1, true},
	}
	for _, tt := range tests {
		d := jute.NewDecoder(mustHex(t, tt.in))
		tt.rec.Decode(d)
		if err := d.Finish(true); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if idx, null := d.FirstNullString(); null != tt.null || (null && idx != tt.idx) {
			t.Errorf("%s: FirstNullString = %d, %v; want %d, %v", tt.name, idx, null, tt.idx, tt.null)
		}
	}
}
