package server

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

func TestFourLetterWordDetection(t *testing.T) {
	for _, w := range []string{"ruok", "srvr", "mntr", "stmk", "wchp"} {
		n := int32(binary.BigEndian.Uint32([]byte(w)))
		if got, ok := fourLetterWord(n); !ok || got != w {
			t.Errorf("%s not recognised", w)
		}
	}
	for _, n := range []int32{45, 0, -1, int32(binary.BigEndian.Uint32([]byte("abcd")))} {
		if _, ok := fourLetterWord(n); ok {
			t.Errorf("length %d taken for a command", n)
		}
	}
}

func TestCheckMultiKinds(t *testing.T) {
	read := jute.MultiOp{Type: jute.OpGetData, Request: &jute.PathWatchRequest{Path: "/"}}
	write := jute.MultiOp{Type: jute.OpDelete, Request: &jute.DeleteRequest{Path: "/a"}}
	cases := []struct {
		name     string
		op       jute.OpCode
		ops      []jute.MultiOp
		want     jute.Code
		withBody bool
	}{
		{"multi of writes", jute.OpMulti, []jute.MultiOp{write}, jute.OK, false},
		{"empty multi", jute.OpMulti, nil, jute.OK, false},
		{"multi with a read", jute.OpMulti, []jute.MultiOp{write, read}, jute.MarshallingError, false},
		{"multiRead of reads", jute.OpMultiRead, []jute.MultiOp{read}, jute.OK, false},
		{"multiRead with a write", jute.OpMultiRead, []jute.MultiOp{read, write}, jute.MarshallingError, false},
		{"multiRead of writes", jute.OpMultiRead, []jute.MultiOp{write, write}, jute.MarshallingError, true},
		{"empty multiRead", jute.OpMultiRead, nil, jute.OK, false},
		{"multi of reads", jute.OpMulti, []jute.MultiOp{read}, jute.MarshallingError, false},
	}
	for _, c := range cases {
		code, body := checkMultiKinds(c.op, &jute.MultiRequest{Ops: c.ops})
		if code != c.want || (body != nil) != c.withBody {
			t.Errorf("%s: %v body=%v, want %v body=%v", c.name, code, body != nil, c.want, c.withBody)
		}
	}
	if code, _ := checkMultiKinds(jute.OpGetData, &jute.PathWatchRequest{}); code != jute.OK {
		t.Errorf("non-multi request rejected: %v", code)
	}
}

func TestReplyFrameBodyOnlyOnSuccess(t *testing.T) {
	ok := replyFrame(3, 9, jute.OK, &jute.PathRequest{Path: "/x"})
	if len(ok) != 4+16+4+2 {
		t.Fatalf("success frame is %d bytes", len(ok))
	}
	bad := replyFrame(3, 9, jute.NoNode, &jute.PathRequest{Path: "/x"})
	if len(bad) != 4+16 {
		t.Fatalf("error frame is %d bytes, want the 16-byte header only", len(bad))
	}
}

// TestMillis: configured milliseconds become a Duration, and a value
// too large for one saturates instead of turning negative (which the log
// would read as "use the default").
func TestMillis(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want time.Duration
	}{
		{0, 0},
		{1000, time.Second},
		{-5, -5 * time.Millisecond},
		{math.MaxInt64 / int64(time.Millisecond), time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond},
		{math.MaxInt64, math.MaxInt64},
	} {
		if got := millis(tc.ms); got != tc.want {
			t.Errorf("millis(%d) = %v, want %v", tc.ms, got, tc.want)
		}
	}
}
