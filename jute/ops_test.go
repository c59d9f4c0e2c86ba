package jute_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// TestClientOpCodesHaveRecords requires a request and a response record for
// every client opcode, and that each record's zero value round-trips.
func TestClientOpCodesHaveRecords(t *testing.T) {
	if len(jute.ClientOpCodes) < 29 {
		t.Errorf("ClientOpCodes lists %d opcodes, want at least 29", len(jute.ClientOpCodes))
	}
	seen := map[jute.OpCode]bool{}
	for _, op := range jute.ClientOpCodes {
		t.Run(op.String(), func(t *testing.T) {
			if seen[op] {
				t.Errorf("%v listed twice", op)
			}
			seen[op] = true
			if strings.HasPrefix(op.String(), "OpCode(") {
				t.Errorf("opcode %d has no name", int32(op))
			}
			for _, kind := range []struct {
				name string
				rec  jute.Record
			}{{"request", jute.NewRequest(op)}, {"response", jute.NewResponse(op)}} {
				if kind.rec == nil {
					t.Errorf("no %s record for %v", kind.name, op)
					continue
				}
				b := jute.Encode(kind.rec)
				if err := jute.Decode(b, kind.rec); err != nil {
					t.Errorf("%s record %T: zero value %x does not decode: %v", kind.name, kind.rec, b, err)
				}
			}
		})
	}
}

// TestRecordTypesByOpcode pins which record each opcode uses, as ZooKeeper
// decodes them.
func TestRecordTypesByOpcode(t *testing.T) {
	tests := []struct {
		op        jute.OpCode
		req, resp string
	}{
		{jute.OpCreate, "*jute.CreateRequest", "*jute.CreateResponse"},
		{jute.OpCreate2, "*jute.CreateRequest", "*jute.Create2Response"},
		{jute.OpCreateContainer, "*jute.CreateRequest", "*jute.Create2Response"},
		{jute.OpCreateTTL, "*jute.CreateTTLRequest", "*jute.Create2Response"},
		{jute.OpDelete, "*jute.DeleteRequest", "*jute.Empty"},
		{jute.OpExists, "*jute.PathWatchRequest", "*jute.StatResponse"},
		{jute.OpGetData, "*jute.PathWatchRequest", "*jute.GetDataResponse"},
		{jute.OpSetData, "*jute.SetDataRequest", "*jute.StatResponse"},
		{jute.OpGetACL, "*jute.PathRequest", "*jute.GetACLResponse"},
		{jute.OpSetACL, "*jute.SetACLRequest", "*jute.StatResponse"},
		{jute.OpGetChildren, "*jute.PathWatchRequest", "*jute.GetChildrenResponse"},
		{jute.OpGetChildren2, "*jute.PathWatchRequest", "*jute.GetChildren2Response"},
		{jute.OpSync, "*jute.PathRequest", "*jute.PathRequest"},
		{jute.OpPing, "*jute.Empty", "*jute.Empty"},
		{jute.OpCheck, "*jute.CheckVersionRequest", "*jute.Empty"},
		{jute.OpMulti, "*jute.MultiRequest", "*jute.MultiResponse"},
		{jute.OpMultiRead, "*jute.MultiRequest", "*jute.MultiResponse"},
		{jute.OpReconfig, "*jute.ReconfigRequest", "*jute.GetDataResponse"},
		{jute.OpCheckWatches, "*jute.WatchesRequest", "*jute.Empty"},
		{jute.OpRemoveWatches, "*jute.WatchesRequest", "*jute.Empty"},
		{jute.OpAuth, "*jute.AuthPacket", "*jute.Empty"},
		{jute.OpSetWatches, "*jute.SetWatches", "*jute.Empty"},
		{jute.OpSetWatches2, "*jute.SetWatches2", "*jute.Empty"},
		{jute.OpSASL, "*jute.SASLToken", "*jute.SASLToken"},
		{jute.OpGetEphemerals, "*jute.PathRequest", "*jute.PathsResponse"},
		{jute.OpGetAllChildrenNumber, "*jute.PathRequest", "*jute.IntResponse"},
		{jute.OpAddWatch, "*jute.AddWatchRequest", "*jute.IntResponse"},
		{jute.OpWhoAmI, "*jute.Empty", "*jute.WhoAmIResponse"},
		{jute.OpCloseSession, "*jute.Empty", "*jute.Empty"},
	}
	if len(tests) != len(jute.ClientOpCodes) {
		t.Errorf("table has %d opcodes, ClientOpCodes %d", len(tests), len(jute.ClientOpCodes))
	}
	for _, tt := range tests {
		if got := fmt.Sprintf("%T", jute.NewRequest(tt.op)); got != tt.req {
			t.Errorf("NewRequest(%v) = %s, want %s", tt.op, got, tt.req)
		}
		if got := fmt.Sprintf("%T", jute.NewResponse(tt.op)); got != tt.resp {
			t.Errorf("NewResponse(%v) = %s, want %s", tt.op, got, tt.resp)
		}
	}
}

func TestUnknownOpCodes(t *testing.T) {
	unknown := []jute.OpCode{0, 10, 20, 23, 50, 99, 108, -1, -10, 1000, -1 << 31}
	for _, op := range unknown {
		if r := jute.NewRequest(op); r != nil {
			t.Errorf("NewRequest(%d) = %T, want nil", int32(op), r)
		}
		if r := jute.NewResponse(op); r != nil {
			t.Errorf("NewResponse(%d) = %T, want nil", int32(op), r)
		}
	}
}

// TestNewRecordsAreFresh checks that two calls never share state.
func TestNewRecordsAreFresh(t *testing.T) {
	a := jute.NewRequest(jute.OpCreate).(*jute.CreateRequest)
	b := jute.NewRequest(jute.OpCreate).(*jute.CreateRequest)
	a.Path = "/x"
	if b.Path != "" {
		t.Error("NewRequest returned shared records")
	}
	c := jute.NewResponse(jute.OpGetData).(*jute.GetDataResponse)
	d := jute.NewResponse(jute.OpGetData).(*jute.GetDataResponse)
	c.Stat.Version = 1
	if d.Stat.Version != 0 {
		t.Error("NewResponse returned shared records")
	}
}

func TestEnumStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{jute.OpCreate.String(), "create"},
		{jute.OpGetAllChildrenNumber.String(), "getAllChildrenNumber"},
		{jute.OpCloseSession.String(), "closeSession"},
		{jute.OpCode(50).String(), "OpCode(50)"},
		{jute.NoNode.String(), "NoNode"},
		{jute.Code(-9).String(), "Code(-9)"},
		{jute.BadVersion.Error(), "zookeeper: BadVersion"},
		{jute.EventNodeChildrenChanged.String(), "NodeChildrenChanged"},
		{jute.EventType(9).String(), "EventType(9)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestCodeValues pins error codes against KeeperException.Code.
func TestCodeValues(t *testing.T) {
	tests := []struct {
		code jute.Code
		want int32
	}{
		{jute.OK, 0}, {jute.SystemError, -1}, {jute.RuntimeInconsistency, -2},
		{jute.MarshallingError, -5}, {jute.Unimplemented, -6}, {jute.BadArguments, -8},
		{jute.UnknownSession, -12}, {jute.NewConfigNoQuorum, -13}, {jute.ReconfigInProgress, -14},
		{jute.NoNode, -101}, {jute.NoAuth, -102}, {jute.BadVersion, -103},
		{jute.NoChildrenForEphemerals, -108}, {jute.NodeExists, -110}, {jute.NotEmpty, -111},
		{jute.SessionExpired, -112}, {jute.InvalidACL, -114}, {jute.AuthFailed, -115},
		{jute.SessionMoved, -118}, {jute.NotReadOnly, -119}, {jute.EphemeralOnLocalSession, -120},
		{jute.NoWatcher, -121}, {jute.ReconfigDisabled, -123}, {jute.SessionClosedRequireSaslAuth, -124},
		{jute.QuotaExceeded, -125}, {jute.ThrottledOp, -127},
	}
	for _, tt := range tests {
		if int32(tt.code) != tt.want {
			t.Errorf("%v = %d, want %d", tt.code, int32(tt.code), tt.want)
		}
	}
}

func TestCreateModes(t *testing.T) {
	tests := []struct {
		m                               jute.CreateMode
		valid, eph, seq, ttl, container bool
	}{
		{jute.ModePersistent, true, false, false, false, false},
		{jute.ModeEphemeral, true, true, false, false, false},
		{jute.ModePersistentSequential, true, false, true, false, false},
		{jute.ModeEphemeralSequential, true, true, true, false, false},
		{jute.ModeContainer, true, false, false, false, true},
		{jute.ModePersistentWithTTL, true, false, false, true, false},
		{jute.ModePersistentSequentialWithTTL, true, false, true, true, false},
		{-1, false, false, false, false, false},
		{7, false, false, false, false, false},
	}
	for _, tt := range tests {
		got := [5]bool{tt.m.Valid(), tt.m.IsEphemeral(), tt.m.IsSequential(), tt.m.IsTTL(), tt.m.IsContainer()}
		want := [5]bool{tt.valid, tt.eph, tt.seq, tt.ttl, tt.container}
		if got != want {
			t.Errorf("mode %d: valid/eph/seq/ttl/container = %v, want %v", tt.m, got, want)
		}
	}
}

// TestIsWrite checks which opcodes consume a zxid in ZooKeeper.
func TestIsWrite(t *testing.T) {
	writes := map[jute.OpCode]bool{
		jute.OpCreate: true, jute.OpCreate2: true, jute.OpCreateContainer: true, jute.OpCreateTTL: true,
		jute.OpDelete: true, jute.OpSetData: true, jute.OpSetACL: true, jute.OpCheck: true,
		jute.OpMulti: true, jute.OpReconfig: true, jute.OpCloseSession: true,
	}
	for _, op := range jute.ClientOpCodes {
		if got := op.IsWrite(); got != writes[op] {
			t.Errorf("%v.IsWrite() = %v, want %v", op, got, writes[op])
		}
	}
	for _, op := range []jute.OpCode{jute.OpCreateSession, jute.OpDeleteContainer} {
		if !op.IsWrite() {
			t.Errorf("internal %v.IsWrite() = false", op)
		}
	}
}
