package zab

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// golden reads the .hex file called name under testdata: hex digits, with # comments and
// whitespace ignored. The files spell out each field in the order of
// zookeeper.jute and of the Java methods named in their comments.
func golden(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s.hex: %v", name, err)
	}
	return b
}

func TestPacketGolden(t *testing.T) {
	li := jute.Encode(&LearnerInfo{ServerID: 4, ProtocolVersion: ProtocolVersion, ConfigVersion: 0x100000000})
	tests := []struct {
		name string
		p    Packet
	}{
		{"observerinfo", Packet{Type: ObserverInfo, Zxid: MakeZxid(1, 0), Data: li}},
		{"request", Packet{Type: Request, Zxid: -1,
			Data:     requestData(0x0400000000000abc, 7, int32(jute.OpSync), jute.Encode(&jute.SyncRequest{Path: "/zab"})),
			AuthInfo: []jute.ID{{Scheme: "ip", ID: "127.0.0.1"}}}},
		{"ping", Packet{Type: Ping, Zxid: 0x20000002a, Data: []byte{4, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0x27, 0x10}}},
		{"ackepoch", Packet{Type: AckEpoch, Zxid: 0x100000036, Data: []byte{0, 0, 0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := golden(t, tt.name)
			if got := EncodePacket(&tt.p); !bytes.Equal(got, want) {
				t.Errorf("encode:\n got %x\nwant %x", got, want)
			}
			p, err := DecodePacket(want, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*p, tt.p) {
				t.Errorf("decode: %+v, want %+v", *p, tt.p)
			}
		})
	}
}

func TestLearnerInfoForms(t *testing.T) {
	full := jute.Encode(&LearnerInfo{ServerID: 9, ProtocolVersion: 0x10000, ConfigVersion: 5})
	for _, tt := range []struct {
		n    int
		want LearnerInfo
	}{
		{8, LearnerInfo{ServerID: 9}},
		{12, LearnerInfo{ServerID: 9, ProtocolVersion: 0x10000}},
		{20, LearnerInfo{ServerID: 9, ProtocolVersion: 0x10000, ConfigVersion: 5}},
	} {
		var li LearnerInfo
		if err := jute.Decode(full[:tt.n], &li); err != nil || li != tt.want {
			t.Errorf("%d bytes: %+v, %v; want %+v", tt.n, li, err, tt.want)
		}
	}
}

// TestPacketRoundTrip: every packet type, with null, empty and full data
// and authinfo, reads back as written, also back to back on one stream.
func TestPacketRoundTrip(t *testing.T) {
	var stream []byte
	var want []Packet
	for typ := Request; typ <= InformAndActivate; typ++ {
		if strings.HasPrefix(typ.String(), "UNKNOWN") {
			t.Errorf("type %d has no name", typ)
		}
		for _, p := range []Packet{
			{Type: typ, Zxid: -1},
			{Type: typ, Zxid: MakeZxid(3, 7), Data: []byte{}, AuthInfo: []jute.ID{}},
			{Type: typ, Zxid: 1 << 40, Data: bytes.Repeat([]byte{byte(typ)}, 100), AuthInfo: []jute.ID{{Scheme: "digest", ID: "u:p"}, {Scheme: "world", ID: ""}}},
		} {
			stream = append(stream, EncodePacket(&p)...)
			want = append(want, p)
		}
	}
	r := bufio.NewReader(bytes.NewReader(stream))
	for i, w := range want {
		p, err := ReadPacket(r, Limits{})
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if !reflect.DeepEqual(*p, w) {
			t.Fatalf("packet %d: %+v, want %+v", i, *p, w)
		}
	}
	if _, err := ReadPacket(r, Limits{}); err != io.EOF {
		t.Errorf("after the last packet: %v, want EOF", err)
	}
}

func TestPacketLimits(t *testing.T) {
	big := EncodePacket(&Packet{Type: Inform, Data: make([]byte, 1000)})
	if _, err := DecodePacket(big, Limits{MaxData: 999}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("data over the limit: %v", err)
	}
	if _, err := DecodePacket(big, Limits{MaxData: 1000}); err != nil {
		t.Errorf("data at the limit: %v", err)
	}
	auth := EncodePacket(&Packet{Type: Request, AuthInfo: make([]jute.ID, 3)})
	if _, err := DecodePacket(auth, Limits{MaxAuth: 2}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("authinfo over the limit: %v", err)
	}
	long := EncodePacket(&Packet{Type: Request, AuthInfo: []jute.ID{{Scheme: strings.Repeat("s", 10)}}})
	if _, err := DecodePacket(long, Limits{MaxString: 9}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("scheme over the limit: %v", err)
	}
	neg := golden(t, "ackepoch")
	copy(neg[12:], []byte{0xff, 0xff, 0xff, 0xfe}) // data length -2
	if _, err := DecodePacket(neg, Limits{}); !errors.Is(err, ErrBadLength) {
		t.Errorf("length -2: %v", err)
	}
	// A lying length: 16 MiB announced, 10 bytes sent.
	lie := append(EncodePacket(&Packet{Type: Snap})[:12], 0, 0xff, 0xff, 0xff)
	lie = append(lie, make([]byte, 10)...)
	if _, err := DecodePacket(lie, Limits{}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short data: %v", err)
	}
	req := golden(t, "request")
	for n := 1; n < len(req); n++ {
		if _, err := DecodePacket(req[:n], Limits{}); err == nil {
			t.Errorf("%d bytes of a request decoded", n)
		}
	}
	if _, err := DecodePacket(append(golden(t, "ping"), 0), Limits{}); err == nil {
		t.Error("trailing byte accepted")
	}
}

func TestNotificationGolden(t *testing.T) {
	look := &Notification{State: Looking, Leader: ObserverVote, Zxid: ObserverVote, ElectionEpoch: 3, PeerEpoch: ObserverVote, Version: 1}
	if got, want := look.Encode(), golden(t, "notification"); !bytes.Equal(got, want) {
		t.Errorf("looking:\n got %x\nwant %x", got, want)
	}
	n, err := DecodeNotification(golden(t, "notification"))
	if err != nil {
		t.Fatal(err)
	}
	// The 40-byte form carries no version (backCompatibility40).
	if want := (Notification{State: Looking, Leader: ObserverVote, Zxid: ObserverVote, ElectionEpoch: 3, PeerEpoch: ObserverVote}); !reflect.DeepEqual(*n, want) {
		t.Errorf("decode 40 bytes: %+v", *n)
	}
	lead := &Notification{State: Leading, Leader: 5, Zxid: 0x100000036, ElectionEpoch: 1, PeerEpoch: 1, Version: 2,
		Config: []byte("server.5=127.0.0.1:2888:3888:participant\nversion=0")}
	if got, want := lead.Encode(), golden(t, "notification-v2"); !bytes.Equal(got, want) {
		t.Errorf("leading:\n got %x\nwant %x", got, want)
	}
	n, err = DecodeNotification(golden(t, "notification-v2"))
	if err != nil || !reflect.DeepEqual(n, lead) {
		t.Errorf("decode v2: %+v, %v", n, err)
	}
	// 28 bytes: the peer epoch is the zxid's.
	n, err = DecodeNotification(lead.Encode()[:28])
	if err != nil || n.PeerEpoch != 1 || n.Leader != 5 {
		t.Errorf("decode 28 bytes: %+v, %v", n, err)
	}
	for _, bad := range [][]byte{make([]byte, 27), lead.Encode()[:43], lead.Encode()[:60]} {
		if _, err := DecodeNotification(bad); !errors.Is(err, ErrShortNotification) {
			t.Errorf("%d bytes: %v", len(bad), err)
		}
	}
}

func TestInitialMessage(t *testing.T) {
	m := &InitialMessage{Protocol: ProtocolV1, SID: 4, Addr: "127.0.0.1:3888"}
	if got, want := m.Encode(), golden(t, "initial"); !bytes.Equal(got, want) {
		t.Errorf("encode:\n got %x\nwant %x", got, want)
	}
	got, err := ReadInitialMessage(bytes.NewReader(golden(t, "initial")))
	if err != nil || *got != *m {
		t.Errorf("read: %+v, %v", got, err)
	}
	old, err := ReadInitialMessage(bytes.NewReader([]byte{0, 0, 0, 0, 0, 0, 0, 7}))
	if err != nil || old.SID != 7 || old.Addr != "" {
		t.Errorf("3.4 opening: %+v, %v", old, err)
	}
	for name, b := range map[string][]byte{
		"unknown version": (&InitialMessage{Protocol: -3, SID: 1, Addr: "a:1"}).Encode(),
		"empty address":   (&InitialMessage{Protocol: ProtocolV2, SID: 1}).Encode(),
		"long address":    (&InitialMessage{Protocol: ProtocolV1, SID: 1, Addr: strings.Repeat("a", 2049)}).Encode(),
		"cut":             golden(t, "initial")[:20],
	} {
		if _, err := ReadInitialMessage(bytes.NewReader(b)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseView(t *testing.T) {
	text := "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
		"server.2=[::1]:2002:3002:observer\n" +
		"server.3=h3:2003:3003|h3b:2103:3103\n" +
		"version=10000002a\n"
	v, err := ParseView(text)
	if err != nil {
		t.Fatal(err)
	}
	want := View{Version: 0x10000002a, Servers: []Server{
		{ID: 1, Addr: "127.0.0.1:2001", ElectionAddr: "127.0.0.1:3001"},
		{ID: 2, Addr: "[::1]:2002", ElectionAddr: "[::1]:3002", Observer: true},
		{ID: 3, Addr: "h3:2003", ElectionAddr: "h3:3003"},
	}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %+v\nwant %+v", v, want)
	}
	if voters := v.Voters(); len(voters) != 2 || voters[1].ID != 3 {
		t.Errorf("voters %+v", voters)
	}
	for _, bad := range []string{"", "version=zz\nserver.1=a:1:2", "server.x=a:1:2", "server.1=a:1", "server.1=a:1:2:boss", "server.1=a:0:2", "server.1=[::1:1:2"} {
		if _, err := ParseView(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseTxnHeaderAndReconfig(t *testing.T) {
	var e jute.Encoder
	e.Long(0x0400000000000001)
	e.Int(5)
	e.Long(0x300000002)
	e.Long(1700000000000)
	e.Int(opReconfig)
	e.String("/zookeeper/config") // SetDataTxn path
	e.Buffer([]byte("server.1=127.0.0.1:1:2\nserver.9=127.0.0.1:3:4:observer\nversion=300000002"))
	e.Int(3)
	h, err := ParseTxnHeader(e.Bytes())
	if err != nil || h != (TxnHeader{ClientID: 0x0400000000000001, Cxid: 5, Zxid: 0x300000002, Time: 1700000000000, Type: opReconfig}) {
		t.Errorf("header %+v, %v", h, err)
	}
	v, err := reconfigView(e.Bytes())
	if err != nil || v.Version != 0x300000002 || len(v.Servers) != 2 || !v.Servers[1].Observer {
		t.Errorf("reconfig view %+v, %v", v, err)
	}
	if _, err := ParseTxnHeader(e.Bytes()[:31]); err == nil {
		t.Error("31-byte header accepted")
	}
}
