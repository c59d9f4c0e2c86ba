package jute_test

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// sampleStat is a Stat with every field distinct, so a swapped field shows.
var sampleStat = jute.Stat{
	Czxid: 0x101, Mzxid: 0x102, Ctime: 1700000000001, Mtime: 1700000000002,
	Version: 3, Cversion: 4, Aversion: 5, EphemeralOwner: 0x10000116dd50013,
	DataLength: 6, NumChildren: 7, Pzxid: 0x108,
}

// digestACL is a second ACL entry for vectors of more than one.
var digestACL = jute.ACL{Perms: jute.PermRead | jute.PermAdmin, ID: jute.ID{Scheme: "digest", ID: "alice:x"}}

// recordCase is one record value for the round-trip, truncation and fuzz
// tests; empty returns a fresh zero record of the same type.
type recordCase struct {
	name  string
	rec   jute.Record
	empty func() jute.Record
}

// recordCases covers every record type, with null/empty variants of the
// buffers and vectors that have them.
func recordCases() []recordCase {
	passwd := []byte("0123456789abcdef")
	return []recordCase{
		{"ID", &jute.ID{Scheme: "world", ID: "anyone"}, func() jute.Record { return &jute.ID{} }},
		{"ACL", &digestACL, func() jute.Record { return &jute.ACL{} }},
		{"Stat", &sampleStat, func() jute.Record { return &jute.Stat{} }},
		{"ClientInfo", &jute.ClientInfo{AuthScheme: "ip", User: "127.0.0.1"}, func() jute.Record { return &jute.ClientInfo{} }},
		{"RequestHeader", &jute.RequestHeader{Xid: -4, Type: jute.OpAuth}, func() jute.Record { return &jute.RequestHeader{} }},
		{"ReplyHeader", &jute.ReplyHeader{Xid: 7, Zxid: -1, Err: jute.NoNode}, func() jute.Record { return &jute.ReplyHeader{} }},
		{"ConnectRequest/readOnly", &jute.ConnectRequest{LastZxidSeen: 0x3b, TimeOut: 30000, SessionID: 0x10000116dd5000d,
			Passwd: passwd, ReadOnly: true, HasReadOnly: true}, func() jute.Record { return &jute.ConnectRequest{} }},
		{"ConnectRequest/noReadOnly", &jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)},
			func() jute.Record { return &jute.ConnectRequest{} }},
		{"ConnectRequest/nullPasswd", &jute.ConnectRequest{ProtocolVersion: 7, HasReadOnly: true},
			func() jute.Record { return &jute.ConnectRequest{} }},
		{"ConnectResponse/readOnly", &jute.ConnectResponse{TimeOut: 4000, SessionID: 1, Passwd: passwd, HasReadOnly: true},
			func() jute.Record { return &jute.ConnectResponse{} }},
		{"ConnectResponse/noReadOnly", &jute.ConnectResponse{TimeOut: 4000, SessionID: 1, Passwd: passwd},
			func() jute.Record { return &jute.ConnectResponse{} }},
		{"CreateRequest", &jute.CreateRequest{Path: "/a/b", Data: []byte("abc"),
			ACL: []jute.ACL{jute.OpenACLUnsafe[0], digestACL}, Flags: jute.ModeEphemeralSequential},
			func() jute.Record { return &jute.CreateRequest{} }},
		{"CreateRequest/nullData", &jute.CreateRequest{Path: "/n", ACL: jute.OpenACLUnsafe},
			func() jute.Record { return &jute.CreateRequest{} }},
		{"CreateRequest/emptyData/noACL", &jute.CreateRequest{Path: "/e", Data: []byte{}},
			func() jute.Record { return &jute.CreateRequest{} }},
		{"CreateTTLRequest", &jute.CreateTTLRequest{Path: "/t", Data: []byte{0}, ACL: jute.CreatorAllACL,
			Flags: jute.ModePersistentWithTTL, TTL: jute.MaxTTL}, func() jute.Record { return &jute.CreateTTLRequest{} }},
		{"CreateResponse", &jute.CreateResponse{Path: "/a/s-0000000001"}, func() jute.Record { return &jute.CreateResponse{} }},
		{"Create2Response", &jute.Create2Response{Path: "/c2", Stat: sampleStat}, func() jute.Record { return &jute.Create2Response{} }},
		{"DeleteRequest", &jute.DeleteRequest{Path: "/d", Version: -1}, func() jute.Record { return &jute.DeleteRequest{} }},
		{"PathWatchRequest", &jute.PathWatchRequest{Path: "/w", Watch: true}, func() jute.Record { return &jute.PathWatchRequest{} }},
		{"StatResponse", &jute.StatResponse{Stat: sampleStat}, func() jute.Record { return &jute.StatResponse{} }},
		{"GetDataResponse", &jute.GetDataResponse{Data: []byte("two"), Stat: sampleStat}, func() jute.Record { return &jute.GetDataResponse{} }},
		{"GetDataResponse/nullData", &jute.GetDataResponse{Stat: sampleStat}, func() jute.Record { return &jute.GetDataResponse{} }},
		{"GetDataResponse/emptyData", &jute.GetDataResponse{Data: []byte{}}, func() jute.Record { return &jute.GetDataResponse{} }},
		{"SetDataRequest", &jute.SetDataRequest{Path: "/s", Data: []byte("zz"), Version: 7}, func() jute.Record { return &jute.SetDataRequest{} }},
		{"SetDataRequest/nullData", &jute.SetDataRequest{Path: "/s", Version: -1}, func() jute.Record { return &jute.SetDataRequest{} }},
		{"PathRequest", &jute.PathRequest{Path: "/zookeeper/config"}, func() jute.Record { return &jute.PathRequest{} }},
		{"PathRequest/empty", &jute.PathRequest{}, func() jute.Record { return &jute.PathRequest{} }},
		{"GetACLResponse", &jute.GetACLResponse{ACL: []jute.ACL{digestACL, jute.ReadACLUnsafe[0]}, Stat: sampleStat},
			func() jute.Record { return &jute.GetACLResponse{} }},
		{"SetACLRequest", &jute.SetACLRequest{Path: "/acl", ACL: []jute.ACL{digestACL}, Version: 1},
			func() jute.Record { return &jute.SetACLRequest{} }},
		{"GetChildrenResponse", &jute.GetChildrenResponse{Children: []string{"a", "", "c"}},
			func() jute.Record { return &jute.GetChildrenResponse{} }},
		{"GetChildrenResponse/none", &jute.GetChildrenResponse{}, func() jute.Record { return &jute.GetChildrenResponse{} }},
		{"GetChildren2Response", &jute.GetChildren2Response{Children: []string{"kid"}, Stat: sampleStat},
			func() jute.Record { return &jute.GetChildren2Response{} }},
		{"CheckVersionRequest", &jute.CheckVersionRequest{Path: "/c", Version: 99}, func() jute.Record { return &jute.CheckVersionRequest{} }},
		{"ReconfigRequest", &jute.ReconfigRequest{JoiningServers: "server.4=h:1:2;3", LeavingServers: "2",
			NewMembers: "", CurConfigID: -1}, func() jute.Record { return &jute.ReconfigRequest{} }},
		{"WatchesRequest", &jute.WatchesRequest{Path: "/w", Type: jute.WatcherAny}, func() jute.Record { return &jute.WatchesRequest{} }},
		{"AuthPacket", &jute.AuthPacket{Scheme: "digest", Auth: []byte("carol:pw")}, func() jute.Record { return &jute.AuthPacket{} }},
		{"AuthPacket/nullAuth", &jute.AuthPacket{Type: 1, Scheme: "x"}, func() jute.Record { return &jute.AuthPacket{} }},
		{"SetWatches", &jute.SetWatches{RelativeZxid: 0x3b, DataWatches: []string{"/d"}, ChildWatches: []string{"/c1", "/c2"}},
			func() jute.Record { return &jute.SetWatches{} }},
		{"SetWatches2", &jute.SetWatches2{RelativeZxid: 1, DataWatches: []string{"/d"}, ExistWatches: []string{"/e"},
			ChildWatches: []string{"/c"}, PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/r", "/s"}},
			func() jute.Record { return &jute.SetWatches2{} }},
		{"SASLToken", &jute.SASLToken{Token: []byte{1, 2, 3}}, func() jute.Record { return &jute.SASLToken{} }},
		{"SASLToken/null", &jute.SASLToken{}, func() jute.Record { return &jute.SASLToken{} }},
		{"SASLToken/empty", &jute.SASLToken{Token: []byte{}}, func() jute.Record { return &jute.SASLToken{} }},
		{"PathsResponse", &jute.PathsResponse{Paths: []string{"/v/rawx", "/v/raw/e1"}}, func() jute.Record { return &jute.PathsResponse{} }},
		{"IntResponse", &jute.IntResponse{Value: -2}, func() jute.Record { return &jute.IntResponse{} }},
		{"AddWatchRequest", &jute.AddWatchRequest{Path: "/aw", Mode: jute.AddWatchPersistentRecursive},
			func() jute.Record { return &jute.AddWatchRequest{} }},
		{"WhoAmIResponse", &jute.WhoAmIResponse{ClientInfo: []jute.ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"},
			{AuthScheme: "digest", User: "bob"}}}, func() jute.Record { return &jute.WhoAmIResponse{} }},
		{"WhoAmIResponse/none", &jute.WhoAmIResponse{}, func() jute.Record { return &jute.WhoAmIResponse{} }},
		{"WatcherEvent", &jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/v/gw"},
			func() jute.Record { return &jute.WatcherEvent{} }},
		{"Empty", &jute.Empty{}, func() jute.Record { return &jute.Empty{} }},
		{"MultiHeader", &jute.MultiHeader{Type: jute.OpCheck, Done: false, Err: -1}, func() jute.Record { return &jute.MultiHeader{} }},
		{"MultiRequest/empty", &jute.MultiRequest{}, func() jute.Record { return &jute.MultiRequest{} }},
		{"MultiRequest/writes", &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Request: &jute.CreateRequest{Path: "/m/a", Data: []byte("A"), ACL: jute.OpenACLUnsafe}},
			{Type: jute.OpCreate2, Request: &jute.CreateRequest{Path: "/m/b", ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral}},
			{Type: jute.OpCreateContainer, Request: &jute.CreateRequest{Path: "/m/c", ACL: jute.OpenACLUnsafe, Flags: jute.ModeContainer}},
			{Type: jute.OpCreateTTL, Request: &jute.CreateTTLRequest{Path: "/m/t", ACL: jute.OpenACLUnsafe,
				Flags: jute.ModePersistentWithTTL, TTL: 5000}},
			{Type: jute.OpSetData, Request: &jute.SetDataRequest{Path: "/m", Data: []byte("m2"), Version: -1}},
			{Type: jute.OpCheck, Request: &jute.CheckVersionRequest{Path: "/m", Version: 1}},
			{Type: jute.OpDelete, Request: &jute.DeleteRequest{Path: "/m/a", Version: -1}},
		}}, func() jute.Record { return &jute.MultiRequest{} }},
		{"MultiRequest/reads", &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpGetChildren, Request: &jute.PathWatchRequest{Path: "/v/raw"}},
			{Type: jute.OpGetData, Request: &jute.PathWatchRequest{Path: "/v/none", Watch: true}},
		}}, func() jute.Record { return &jute.MultiRequest{} }},
		{"MultiResponse/empty", &jute.MultiResponse{}, func() jute.Record { return &jute.MultiResponse{} }},
		{"MultiResponse/success", &jute.MultiResponse{Results: []jute.MultiResult{
			{Type: jute.OpCreate, Response: &jute.CreateResponse{Path: "/m/a"}},
			{Type: jute.OpCreate2, Response: &jute.Create2Response{Path: "/m/c", Stat: sampleStat}},
			{Type: jute.OpSetData, Response: &jute.StatResponse{Stat: sampleStat}},
			{Type: jute.OpCheck},
			{Type: jute.OpDelete},
			{Type: jute.OpGetData, Response: &jute.GetDataResponse{Stat: sampleStat}},
			{Type: jute.OpGetChildren, Response: &jute.GetChildrenResponse{Children: []string{"e1"}}},
		}}, func() jute.Record { return &jute.MultiResponse{} }},
		{"MultiResponse/failed", &jute.MultiResponse{Results: []jute.MultiResult{
			{Type: jute.OpError, Err: jute.OK},
			{Type: jute.OpError, Err: jute.BadVersion},
			{Type: jute.OpError, Err: jute.RuntimeInconsistency},
		}}, func() jute.Record { return &jute.MultiResponse{} }},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range recordCases() {
		t.Run(tc.name, func(t *testing.T) {
			b := jute.Encode(tc.rec)
			got := tc.empty()
			if err := jute.Decode(b, got); err != nil {
				t.Fatalf("Decode(%x): %v", b, err)
			}
			if !reflect.DeepEqual(got, tc.rec) {
				t.Errorf("round trip\n got %+v\nwant %+v", got, tc.rec)
			}
			if again := jute.Encode(got); !bytes.Equal(again, b) {
				t.Errorf("re-encoding differs\n got %x\nwant %x", again, b)
			}
		})
	}
}

// TestEncodedSizes pins the encoded sizes of fixed-layout records.
func TestEncodedSizes(t *testing.T) {
	tests := []struct {
		name string
		rec  jute.Record
		want int
	}{
		{"Stat", &jute.Stat{}, jute.StatSize},
		{"Stat is 68", &sampleStat, 68},
		{"ReplyHeader", &jute.ReplyHeader{}, jute.ReplyHeaderSize},
		{"RequestHeader", &jute.RequestHeader{}, 8},
		{"MultiHeader", &jute.MultiHeader{}, 9},
		{"ConnectRequest without readOnly", &jute.ConnectRequest{Passwd: make([]byte, 16)}, 44},
		{"ConnectRequest with readOnly", &jute.ConnectRequest{Passwd: make([]byte, 16), HasReadOnly: true}, 45},
		{"ConnectResponse without readOnly", &jute.ConnectResponse{Passwd: make([]byte, 16)}, 36},
		{"ConnectResponse with readOnly", &jute.ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: true}, 37},
		{"empty MultiRequest is the end marker", &jute.MultiRequest{}, 9},
		{"Empty", &jute.Empty{}, 0},
	}
	for _, tt := range tests {
		if got := len(jute.Encode(tt.rec)); got != tt.want {
			t.Errorf("%s: %d bytes, want %d", tt.name, got, tt.want)
		}
	}
}

// mustHex decodes hex written with spaces and '|' separators.
func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// TestWireExamples encodes byte examples captured from ZooKeeper 3.8.0
// (a multi and its reply, a notification) and decodes them back.
func TestWireExamples(t *testing.T) {
	passwd := mustHex(t, "1cdb6bc63b04a03a5e675fa2a5e8d39b")
	tests := []struct {
		name  string
		recs  []jute.Record
		frame string
	}{
		{"kazoo ConnectRequest",
			[]jute.Record{&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16), HasReadOnly: true}},
			"0000002d 00000000 0000000000000000 00002710 0000000000000000 00000010 " + strings.Repeat("00", 16) + " 00"},
		{"ConnectRequest without readOnly",
			[]jute.Record{&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}},
			"0000002c 00000000 0000000000000000 00007530 0000000000000000 00000010 " + strings.Repeat("00", 16)},
		{"ConnectResponse",
			[]jute.Record{&jute.ConnectResponse{TimeOut: 10000, SessionID: 0x010000116dd50003, Passwd: passwd, HasReadOnly: true}},
			"00000025 00000000 00002710 010000116dd50003 00000010 1cdb6bc63b04a03a5e675fa2a5e8d39b 00"},
		{"ConnectResponse without readOnly",
			[]jute.Record{&jute.ConnectResponse{TimeOut: 30000, SessionID: 0x10000116dd50013, Passwd: passwd}},
			"00000024 00000000 00007530 010000116dd50013 00000010 1cdb6bc63b04a03a5e675fa2a5e8d39b"},
		{"rejected ConnectResponse",
			[]jute.Record{&jute.ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: true}},
			"00000025 00000000 00000000 0000000000000000 00000010 " + strings.Repeat("00", 16) + " 00"},
		{"create /v/cm",
			[]jute.Record{&jute.RequestHeader{Xid: 1, Type: jute.OpCreate},
				&jute.CreateRequest{Path: "/v/cm", Data: []byte("abc"), ACL: jute.OpenACLUnsafe}},
			`00000037 00000001 00000001 | 00000005 2f762f636d | 00000003 616263 |
			00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65 | 00000000`},
		{"create reply",
			[]jute.Record{&jute.ReplyHeader{Xid: 1, Zxid: 6}, &jute.CreateResponse{Path: "/v/cm"}},
			"00000019 00000001 0000000000000006 00000000 | 00000005 2f762f636d"},
		{"create with null data",
			[]jute.Record{&jute.RequestHeader{Xid: 1, Type: jute.OpCreate},
				&jute.CreateRequest{Path: "/v/raw", ACL: jute.OpenACLUnsafe}},
			`00000035 00000001 00000001 | 00000006 2f762f726177 | ffffffff |
			00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65 | 00000000`},
		{"NodeDataChanged notification",
			[]jute.Record{&jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1},
				&jute.WatcherEvent{Type: jute.EventNodeDataChanged, State: jute.StateSyncConnected, Path: "/v/gw"}},
			"00000021 ffffffff ffffffffffffffff 00000000 | 00000003 00000003 00000005 2f762f6777"},
		{"BadVersion reply",
			[]jute.Record{&jute.ReplyHeader{Xid: 3, Zxid: 0x12, Err: jute.BadVersion}},
			"00000010 00000003 0000000000000012 ffffff99"},
		{"ping", []jute.Record{&jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing}},
			"00000008 fffffffe 0000000b"},
		{"ping reply", []jute.Record{&jute.ReplyHeader{Xid: jute.XidPing, Zxid: 0x6d}},
			"00000010 fffffffe 000000000000006d 00000000"},
		{"closeSession", []jute.Record{&jute.RequestHeader{Xid: 5, Type: jute.OpCloseSession}},
			"00000008 00000005 fffffff5"},
		{"failed multi reply",
			[]jute.Record{&jute.ReplyHeader{Xid: 2, Zxid: 0x28}, &jute.MultiResponse{Results: []jute.MultiResult{
				{Type: jute.OpError, Err: jute.OK},
				{Type: jute.OpError, Err: jute.BadVersion},
				{Type: jute.OpError, Err: jute.RuntimeInconsistency},
			}}},
			`00000040 00000002 0000000000000028 00000000 | ffffffff 00 00000000 00000000 |
			ffffffff 00 ffffff99 ffffff99 | ffffffff 00 fffffffe fffffffe | ffffffff 01 ffffffff`},
		{"rejected multiRead carries the end marker",
			[]jute.Record{&jute.ReplyHeader{Xid: 8, Zxid: 0x6a, Err: jute.MarshallingError}, &jute.MultiResponse{}},
			"00000019 00000008 000000000000006a fffffffb | ffffffff 01 ffffffff"},
		{"empty multi request",
			[]jute.Record{&jute.RequestHeader{Xid: 9, Type: jute.OpMulti}, &jute.MultiRequest{}},
			"00000011 00000009 0000000e | ffffffff 01 ffffffff"},
		{"addWatch reply body",
			[]jute.Record{&jute.ReplyHeader{Xid: 14, Zxid: 0x6d}, &jute.IntResponse{}},
			"00000014 0000000e 000000000000006d 00000000 | 00000000"},
		{"sasl reply without SASL",
			[]jute.Record{&jute.ReplyHeader{Xid: 3}, &jute.SASLToken{}},
			"00000014 00000003 0000000000000000 00000000 ffffffff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := mustHex(t, tt.frame)
			got := jute.AppendFrame(nil, tt.recs...)
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded\n got %x\nwant %x", got, want)
			}
			d := jute.NewDecoder(want[4:])
			for _, r := range tt.recs {
				fresh := reflect.New(reflect.TypeOf(r).Elem()).Interface().(jute.Record)
				fresh.Decode(d)
				if !reflect.DeepEqual(fresh, r) {
					t.Errorf("decoded %T\n got %+v\nwant %+v", r, fresh, r)
				}
			}
			if err := d.Finish(true); err != nil {
				t.Errorf("decode: %v", err)
			}
		})
	}
}

// TestNullVersusEmpty checks the -1 / 0 length distinction of buffers and
// how null and empty vectors and strings read.
func TestNullVersusEmpty(t *testing.T) {
	if got := jute.Encode(&jute.SASLToken{}); !bytes.Equal(got, mustHex(t, "ffffffff")) {
		t.Errorf("nil buffer encodes as %x, want ffffffff", got)
	}
	if got := jute.Encode(&jute.SASLToken{Token: []byte{}}); !bytes.Equal(got, mustHex(t, "00000000")) {
		t.Errorf("empty buffer encodes as %x, want 00000000", got)
	}
	tests := []struct {
		name      string
		in        string
		wantNil   bool // buffer / vector reads as nil
		wantEmpty bool // buffer reads as a non-nil empty slice
	}{
		{"null buffer", "ffffffff", true, false},
		{"empty buffer", "00000000", false, true},
	}
	for _, tt := range tests {
		var tok jute.SASLToken
		if err := jute.Decode(mustHex(t, tt.in), &tok); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if (tok.Token == nil) != tt.wantNil || (tok.Token != nil && len(tok.Token) == 0) != tt.wantEmpty {
			t.Errorf("%s: decoded %#v", tt.name, tok.Token)
		}
	}
	// Vectors: both null (-1) and empty (0) read as nil; nil writes as 0,
	// as ZooKeeper servers write empty lists.
	for _, in := range []string{"ffffffff", "00000000"} {
		var kids jute.GetChildrenResponse
		if err := jute.Decode(mustHex(t, in), &kids); err != nil || kids.Children != nil {
			t.Errorf("children vector %s: %#v, %v", in, kids.Children, err)
		}
		var acl jute.GetACLResponse
		if err := jute.Decode(append(mustHex(t, in), make([]byte, jute.StatSize)...), &acl); err != nil || acl.ACL != nil {
			t.Errorf("ACL vector %s: %#v, %v", in, acl.ACL, err)
		}
		var who jute.WhoAmIResponse
		if err := jute.Decode(mustHex(t, in), &who); err != nil || who.ClientInfo != nil {
			t.Errorf("clientInfo vector %s: %#v, %v", in, who.ClientInfo, err)
		}
	}
	if got := jute.Encode(&jute.GetChildrenResponse{}); !bytes.Equal(got, mustHex(t, "00000000")) {
		t.Errorf("nil vector encodes as %x, want 00000000", got)
	}
	// A null string reads as "" (and is written back as length 0).
	var p jute.PathRequest
	if err := jute.Decode(mustHex(t, "ffffffff"), &p); err != nil || p.Path != "" {
		t.Errorf("null string: %q, %v", p.Path, err)
	}
}

// TestConnectReadOnlyByte checks that the optional trailing readOnly byte is
// detected only by its presence and that any non-zero value reads as true.
func TestConnectReadOnlyByte(t *testing.T) {
	base := "00000000 0000000000000000 00007530 0000000000000000 00000010 " + strings.Repeat("00", 16)
	tests := []struct {
		name    string
		tail    string
		wantHas bool
		wantRO  bool
	}{
		{"absent", "", false, false},
		{"zero", "00", true, false},
		{"one", "01", true, true},
		{"non-canonical true", "ff", true, true},
	}
	for _, tt := range tests {
		var req jute.ConnectRequest
		if err := jute.Decode(mustHex(t, base+tt.tail), &req); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if req.HasReadOnly != tt.wantHas || req.ReadOnly != tt.wantRO {
			t.Errorf("%s: HasReadOnly=%v ReadOnly=%v, want %v %v", tt.name, req.HasReadOnly, req.ReadOnly, tt.wantHas, tt.wantRO)
		}
	}
	var req jute.ConnectRequest
	if err := jute.Decode(mustHex(t, base+"0000"), &req); err == nil {
		t.Error("ConnectRequest with two trailing bytes decoded without error")
	}
}

// TestMultiDecoding covers the parts of multi decoding the round trips do
// not: the 3.8 create2 quirk, invalid op types, and header fields that are
// ignored on input.
func TestMultiDecoding(t *testing.T) {
	// A create2 op answered by ZooKeeper 3.8 with a type-1 result.
	resp := mustHex(t, "00000001 00 00000000 | 00000005 2f6d2f6232 | ffffffff 01 ffffffff")
	var mr jute.MultiResponse
	if err := jute.Decode(resp, &mr); err != nil {
		t.Fatal(err)
	}
	want := []jute.MultiResult{{Type: jute.OpCreate, Response: &jute.CreateResponse{Path: "/m/b2"}}}
	if !reflect.DeepEqual(mr.Results, want) {
		t.Errorf("create result: %+v", mr.Results)
	}
	// The header err of a success result is not part of the result.
	var odd jute.MultiResponse
	if err := jute.Decode(mustHex(t, "00000002 00 ffffff9b | ffffffff 01 ffffffff"), &odd); err != nil {
		t.Fatal(err)
	}
	if len(odd.Results) != 1 || odd.Results[0].Err != jute.OK || odd.Results[0].Type != jute.OpDelete {
		t.Errorf("delete result with header err: %+v", odd.Results)
	}
	bad := []struct {
		name string
		rec  jute.Record
		in   string
	}{
		{"request op getChildren2", &jute.MultiRequest{}, "0000000c 00 ffffffff 00000001 2f 00 ffffffff 01 ffffffff"},
		{"request op ping", &jute.MultiRequest{}, "0000000b 00 ffffffff ffffffff 01 ffffffff"},
		{"request op multi", &jute.MultiRequest{}, "0000000e 00 ffffffff ffffffff 01 ffffffff"},
		{"request without end marker", &jute.MultiRequest{}, "0000000d 00 ffffffff 00000001 2f 00000000"},
		{"response type exists", &jute.MultiResponse{}, "00000003 00 00000000 ffffffff 01 ffffffff"},
		{"response without end marker", &jute.MultiResponse{}, "00000002 00 00000000"},
		{"response type error without body", &jute.MultiResponse{}, "ffffffff 00 ffffff9b"},
	}
	for _, tt := range bad {
		if err := jute.Decode(mustHex(t, tt.in), tt.rec); err == nil {
			t.Errorf("%s: decoded without error: %+v", tt.name, tt.rec)
		}
	}
	// Bytes after the end marker are left for the caller (strict Decode fails).
	d := jute.NewDecoder(mustHex(t, "ffffffff 01 ffffffff 00"))
	var mq jute.MultiRequest
	mq.Decode(d)
	if d.Err() != nil || d.Remaining() != 1 {
		t.Errorf("end marker then 1 byte: err %v, remaining %d", d.Err(), d.Remaining())
	}
}
