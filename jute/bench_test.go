package jute_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// benchCase is one record for the encode/decode benchmarks.
type benchCase struct {
	name  string
	rec   jute.Record
	empty jute.Record // decoded into on every iteration
}

func benchCases() []benchCase {
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
	return []benchCase{
		{"ConnectRequest", &jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true}, &jute.ConnectRequest{}},
		{"CreateRequest", &jute.CreateRequest{Path: "/app/config/service-0001", Data: []byte("some configuration"),
			ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeralSequential}, &jute.CreateRequest{}},
		{"GetDataResponse1KiB", &jute.GetDataResponse{Data: bytes.Repeat([]byte{0xab}, 1024), Stat: sampleStat}, &jute.GetDataResponse{}},
		{"Stat", &sampleStat, &jute.Stat{}},
		{"ReplyHeader", &jute.ReplyHeader{Xid: 42, Zxid: 0x100000042}, &jute.ReplyHeader{}},
		{"MultiRequest10", &jute.MultiRequest{Ops: ops}, &jute.MultiRequest{}},
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			e := jute.NewEncoder(make([]byte, 0, 4096))
			b.ReportAllocs()
			b.SetBytes(int64(len(jute.Encode(bc.rec))))
			for b.Loop() {
				e.Reset()
				bc.rec.Encode(e)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			in := jute.Encode(bc.rec)
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if err := jute.Decode(in, bc.empty); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadFrame reads one small request frame into a reused buffer.
func BenchmarkReadFrame(b *testing.B) {
	in := jute.AppendFrame(nil, &jute.RequestHeader{Xid: 1, Type: jute.OpGetData}, &jute.PathWatchRequest{Path: "/a/b"})
	buf := make([]byte, 0, 1024)
	r := bytes.NewReader(in)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		r.Reset(in)
		if _, err := jute.ReadFrame(r, jute.DefaultMaxBuffer, buf); err != nil {
			b.Fatal(err)
		}
	}
}
