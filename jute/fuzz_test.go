package jute_test

import (
	"bytes"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// maxFuzzInput caps fuzz inputs; larger ones only slow the search.
const maxFuzzInput = 1 << 16

// Properties checked by the fuzz targets for any input that decodes:
//   - re-encoding gives exactly as many bytes as were consumed (every field
//     has a fixed or self-described size, and null forms keep their size);
//   - decoding the re-encoding gives an equal record (encoding is lossless);
//   - encoding is canonical: encode(decode(encode(x))) == encode(x).
// Byte identity with the input holds only for canonical inputs (booleans
// 0/1, no null strings or vectors, multi header fields as ZooKeeper writes
// them); the golden replay checks that on real traffic.

// checkReencode applies the properties above to rec, freshly decoded from
// in (all of it); fresh returns an empty record of the same type.
func checkReencode(t *testing.T, in []byte, rec jute.Record, fresh func() jute.Record) []byte {
	t.Helper()
	enc := jute.Encode(rec)
	if len(enc) != len(in) {
		t.Fatalf("%T: decoded %d bytes, re-encoded %d\n in %x\nout %x", rec, len(in), len(enc), in, enc)
	}
	again := fresh()
	if err := jute.Decode(enc, again); err != nil {
		t.Fatalf("%T: re-encoding %x does not decode: %v", rec, enc, err)
	}
	if !reflect.DeepEqual(again, rec) {
		t.Fatalf("%T: re-decoded record differs\n got %+v\nwant %+v", rec, again, rec)
	}
	if enc2 := jute.Encode(again); !bytes.Equal(enc2, enc) {
		t.Fatalf("%T: encoding not canonical\n%x\n%x", rec, enc, enc2)
	}
	return enc
}

// seedCaptured adds every captured frame payload of the wanted kind.
func seedCaptured(f *testing.F, keep func(client, first bool, payload []byte) bool) {
	n := 0
	for _, path := range vectorFiles(f) {
		seenC, seenS := map[int]bool{}, map[int]bool{}
		for _, fr := range parseVectorFile(f, path) {
			if fr.truncated != 0 {
				continue
			}
			seen := seenS
			if fr.client {
				seen = seenC
			}
			first := !seen[fr.conn]
			seen[fr.conn] = true
			if keep(fr.client, first, fr.raw[4:]) {
				f.Add(fr.raw[4:])
				n++
			}
		}
	}
	if n == 0 {
		f.Fatalf("no seeds found under %s", filepath.Clean(vectorDir))
	}
}

// FuzzDecodeRequest decodes RequestHeader plus the opcode's request record,
// as the server does for every frame after the handshake.
func FuzzDecodeRequest(f *testing.F) {
	seedCaptured(f, func(client, first bool, _ []byte) bool { return client && !first })
	for _, tc := range recordCases() {
		for _, op := range jute.ClientOpCodes {
			if r := jute.NewRequest(op); r != nil && reflect.TypeOf(r) == reflect.TypeOf(tc.rec) {
				f.Add(jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: op}, tc.rec)[4:])
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxFuzzInput {
			t.Skip()
		}
		d := jute.NewDecoder(in)
		var h jute.RequestHeader
		h.Decode(d)
		rec := jute.NewRequest(h.Type)
		if d.Err() != nil || rec == nil {
			return
		}
		rec.Decode(d)
		if d.Finish(true) != nil {
			return
		}
		checkReencode(t, in[8:], rec, func() jute.Record { return jute.NewRequest(h.Type) })
		if frame := jute.AppendFrame(nil, &h, rec); !bytes.Equal(frame[4:12], in[:8]) {
			t.Fatalf("header re-encoded as %x, was %x", frame[4:12], in[:8])
		}
	})
}

// FuzzDecodeMulti decodes the same bytes as a multi request and as a multi
// response body.
func FuzzDecodeMulti(f *testing.F) {
	seedCaptured(f, func(client, first bool, p []byte) bool {
		if first || len(p) < 16 {
			return false
		}
		if client {
			return bytes.Equal(p[4:8], []byte{0, 0, 0, 14}) || bytes.Equal(p[4:8], []byte{0, 0, 0, 22})
		}
		return len(p) > 16 && bytes.HasSuffix(p, []byte{0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff})
	})
	for _, tc := range recordCases() {
		switch tc.rec.(type) {
		case *jute.MultiRequest, *jute.MultiResponse:
			f.Add(jute.Encode(tc.rec))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxFuzzInput {
			t.Skip()
		}
		// Captured frames carry a header (8 bytes for requests, 16 for
		// replies); try the body at each of those offsets too.
		for _, off := range []int{0, 8, 16} {
			if off > len(in) {
				break
			}
			body := in[off:]
			var req jute.MultiRequest
			if jute.Decode(body, &req) == nil {
				checkReencode(t, body, &req, func() jute.Record { return &jute.MultiRequest{} })
			}
			var resp jute.MultiResponse
			if jute.Decode(body, &resp) == nil {
				checkReencode(t, body, &resp, func() jute.Record { return &jute.MultiResponse{} })
			}
		}
	})
}

// FuzzConnectRequest decodes the handshake records. Apart from the value of
// the readOnly byte (any non-zero byte reads as true) a decoded handshake
// re-encodes to exactly the input bytes.
func FuzzConnectRequest(f *testing.F) {
	seedCaptured(f, func(_, first bool, _ []byte) bool { return first })
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxFuzzInput {
			t.Skip()
		}
		var req jute.ConnectRequest
		if jute.Decode(in, &req) == nil {
			out := checkReencode(t, in, &req, func() jute.Record { return &jute.ConnectRequest{} })
			sameHandshake(t, in, out, req.HasReadOnly)
		}
		var resp jute.ConnectResponse
		if jute.Decode(in, &resp) == nil {
			out := checkReencode(t, in, &resp, func() jute.Record { return &jute.ConnectResponse{} })
			sameHandshake(t, in, out, resp.HasReadOnly)
		}
	})
}

// sameHandshake compares a re-encoded handshake with its input: identical
// up to the readOnly byte, which is compared by truth value.
func sameHandshake(t *testing.T, in, out []byte, hasReadOnly bool) {
	t.Helper()
	n := len(in)
	if hasReadOnly {
		n--
		if (in[n] != 0) != (out[n] != 0) {
			t.Fatalf("readOnly byte %x re-encoded as %x", in[n], out[n])
		}
	}
	if !bytes.Equal(in[:n], out[:n]) {
		t.Fatalf("handshake re-encoded differently\n in %x\nout %x", in, out)
	}
}
