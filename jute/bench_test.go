package jute_test

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// benchCase is one message for the encode/decode benchmarks: the records a
// frame carries, in order (a header and its body, or a body alone).
type benchCase struct {
	name  string
	parts []jute.Record
	empty func() []jute.Record // fresh zero records of the same types
}

// records is shorthand for a []jute.Record literal.
func records(rs ...jute.Record) []jute.Record { return rs }

// benchMulti is a multi of 10 ops: creates with data and ACL, setData and
// version checks, as Curator and Kafka send them.
func benchMulti() *jute.MultiRequest {
	ops := make([]jute.MultiOp, 0, 10)
	for i := range 10 {
		path := fmt.Sprintf("/bench/node-%d", i)
		switch i % 3 {
		case 0:
			ops = append(ops, jute.MultiOp{Type: jute.OpCreate, Request: &jute.CreateRequest{
				Path: path, Data: bytes.Repeat([]byte{'x'}, 32), ACL: jute.OpenACLUnsafe}})
		case 1:
			ops = append(ops, jute.MultiOp{Type: jute.OpSetData, Request: &jute.SetDataRequest{
				Path: path, Data: bytes.Repeat([]byte{'y'}, 32), Version: -1}})
		default:
			ops = append(ops, jute.MultiOp{Type: jute.OpCheck, Request: &jute.CheckVersionRequest{Path: path, Version: 3}})
		}
	}
	return &jute.MultiRequest{Ops: ops}
}

// benchCases are the messages of the hot paths: every request and reply
// of a getData, a create, a setData, a notification, a handshake, a multi.
func benchCases() []benchCase {
	data100 := bytes.Repeat([]byte{0xab}, 100)
	passwd := []byte("0123456789abcdef")
	return []benchCase{
		{"RequestHeader+GetDataRequest",
			records(&jute.RequestHeader{Xid: 7, Type: jute.OpGetData}, &jute.GetDataRequest{Path: "/zkbench/k/d0042/k0000421", Watch: true}),
			func() []jute.Record { return records(&jute.RequestHeader{}, &jute.GetDataRequest{}) }},
		{"ReplyHeader+GetDataResponse",
			records(&jute.ReplyHeader{Xid: 7, Zxid: 0x100000042}, &jute.GetDataResponse{Data: data100, Stat: sampleStat}),
			func() []jute.Record { return records(&jute.ReplyHeader{}, &jute.GetDataResponse{}) }},
		{"GetDataResponse1KiB",
			records(&jute.GetDataResponse{Data: bytes.Repeat([]byte{0xab}, 1024), Stat: sampleStat}),
			func() []jute.Record { return records(&jute.GetDataResponse{}) }},
		{"RequestHeader+CreateRequest",
			records(&jute.RequestHeader{Xid: 8, Type: jute.OpCreate}, &jute.CreateRequest{Path: "/app/config/service-0001",
				Data: data100, ACL: []jute.ACL{jute.OpenACLUnsafe[0], digestACL}, Flags: jute.ModeEphemeralSequential}),
			func() []jute.Record { return records(&jute.RequestHeader{}, &jute.CreateRequest{}) }},
		{"RequestHeader+SetDataRequest",
			records(&jute.RequestHeader{Xid: 9, Type: jute.OpSetData}, &jute.SetDataRequest{Path: "/zkbench/k/d0042/k0000421", Data: data100, Version: -1}),
			func() []jute.Record { return records(&jute.RequestHeader{}, &jute.SetDataRequest{}) }},
		{"ReplyHeader+SetDataResponse",
			records(&jute.ReplyHeader{Xid: 9, Zxid: 0x100000043}, &jute.SetDataResponse{Stat: sampleStat}),
			func() []jute.Record { return records(&jute.ReplyHeader{}, &jute.SetDataResponse{}) }},
		{"ReplyHeader+WatcherEvent",
			records(&jute.ReplyHeader{Xid: -1, Zxid: -1}, &jute.WatcherEvent{Type: jute.EventNodeDataChanged,
				State: jute.StateSyncConnected, Path: "/zkbench/w-run/hot"}),
			func() []jute.Record { return records(&jute.ReplyHeader{}, &jute.WatcherEvent{}) }},
		{"ConnectRequest",
			records(&jute.ConnectRequest{TimeOut: 30000, SessionID: 0x10000116dd50013, Passwd: passwd, HasReadOnly: true}),
			func() []jute.Record { return records(&jute.ConnectRequest{}) }},
		{"ConnectResponse",
			records(&jute.ConnectResponse{TimeOut: 30000, SessionID: 0x10000116dd50013, Passwd: passwd, HasReadOnly: true}),
			func() []jute.Record { return records(&jute.ConnectResponse{}) }},
		{"RequestHeader+MultiRequest10",
			records(&jute.RequestHeader{Xid: 10, Type: jute.OpMulti}, benchMulti()),
			func() []jute.Record { return records(&jute.RequestHeader{}, &jute.MultiRequest{}) }},
		{"Stat", records(&sampleStat), func() []jute.Record { return records(&jute.Stat{}) }},
	}
}

// encodeAll returns the concatenated encodings of parts.
func encodeAll(parts []jute.Record) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, jute.Encode(p)...)
	}
	return out
}

// BenchmarkEncode encodes each message into a reused buffer and checks the
// last encoding against jute.Encode's.
func BenchmarkEncode(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			want := encodeAll(bc.parts)
			e := jute.NewEncoder(make([]byte, 0, 4096))
			b.ReportAllocs()
			b.SetBytes(int64(len(want)))
			for b.Loop() {
				e.Reset()
				for _, p := range bc.parts {
					p.Encode(e)
				}
			}
			if !bytes.Equal(e.Bytes(), want) {
				b.Fatalf("encoded %x, want %x", e.Bytes(), want)
			}
		})
	}
}

// BenchmarkDecode decodes each message into the same records every time
// and checks that the last decode gives back the original values.
func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			in := encodeAll(bc.parts)
			got := bc.empty()
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				d := jute.NewDecoder(in)
				for _, r := range got {
					r.Decode(d)
				}
				if err := d.Finish(true); err != nil {
					b.Fatal(err)
				}
			}
			if !reflect.DeepEqual(got, bc.parts) {
				b.Fatalf("decoded %+v, want %+v", got, bc.parts)
			}
		})
	}
}

// BenchmarkReadFrame reads one small request frame into a reused buffer.
func BenchmarkReadFrame(b *testing.B) {
	in := jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpGetData}, &jute.PathWatchRequest{Path: "/a/b"})
	buf := make([]byte, 0, 1024)
	r := bytes.NewReader(in)
	var got []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		r.Reset(in)
		var err error
		if got, err = jute.ReadFrame(r, jute.DefaultMaxBuffer, buf); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.Equal(got, in[4:]) {
		b.Fatalf("frame payload %x, want %x", got, in[4:])
	}
}
