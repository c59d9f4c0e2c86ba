package txnlog

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
)

func sampleEntry() *Entry {
	ids := []jute.ID{{Scheme: "ip", ID: "127.0.0.1"}, {Scheme: "digest", ID: "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="}}
	return &Entry{Time: 1795328583539, Txns: []*Txn{
		{RequestID: 1, Timeout: 30000, Owner: 2, Tree: datatree.Txn{Type: jute.OpCreateSession, SessionID: 0x0100000000000001}},
		{RequestID: 2, Tree: datatree.Txn{Type: jute.OpCreate, SessionID: 7, IDs: ids,
			Request: &jute.CreateRequest{Path: "/a", Data: []byte("x"), ACL: jute.OpenACLUnsafe, Flags: jute.ModeEphemeral}}},
		{RequestID: 3, Tree: datatree.Txn{Type: jute.OpCreateTTL, SessionID: 7,
			Request: &jute.CreateTTLRequest{Path: "/t", Data: []byte{}, ACL: jute.OpenACLUnsafe, Flags: jute.ModePersistentWithTTL, TTL: 500}}},
		{RequestID: 4, Tree: datatree.Txn{Type: jute.OpSetData, SessionID: 7, Request: &jute.SetDataRequest{Path: "/a", Data: nil, Version: -1}}},
		{RequestID: 5, Tree: datatree.Txn{Type: jute.OpDelete, SessionID: 7, Request: &jute.DeleteRequest{Path: "/a", Version: 3}}},
		{RequestID: 6, Tree: datatree.Txn{Type: jute.OpSetACL, SessionID: 7, Request: &jute.SetACLRequest{Path: "/a", ACL: jute.ReadACLUnsafe, Version: 0}}},
		{RequestID: 7, Tree: datatree.Txn{Type: jute.OpMulti, SessionID: 7, Request: &jute.MultiRequest{Ops: []jute.MultiOp{
			{Type: jute.OpCreate, Request: &jute.CreateRequest{Path: "/m", ACL: jute.OpenACLUnsafe}},
			{Type: jute.OpCheck, Request: &jute.CheckVersionRequest{Path: "/m", Version: 0}},
		}}}},
		{RequestID: 8, Tree: datatree.Txn{Type: jute.OpDeleteContainer, Request: &jute.PathRequest{Path: "/c"}}},
		{RequestID: 9, Owner: 3, Tree: datatree.Txn{Type: OpMoveSession, SessionID: 0x0100000000000001}},
		{RequestID: 10, Tree: datatree.Txn{Type: jute.OpCloseSession, SessionID: 0x0100000000000001}},
		{RequestID: 11, Owner: 2, Tree: datatree.Txn{Type: OpFailedWrite, SessionID: 7, IDs: ids,
			Request: &FailedWrite{Op: jute.OpSetData, Err: jute.NoNode, Path: "/gone"}}},
	}}
}

// PeekPath reads the opcode, path and sequential flag of every sample
// transaction as a full decode does.
func TestPeekPathAgreesWithDecode(t *testing.T) {
	en := sampleEntry()
	en.Txns = append(en.Txns, &Txn{RequestID: 12, Tree: datatree.Txn{Type: jute.OpCreate2, IDs: []jute.ID{{Scheme: "world", ID: "anyone"}},
		Request: &jute.CreateRequest{Path: "/q/item-", Data: []byte("payload"), ACL: jute.OpenACLUnsafe, Flags: jute.ModePersistentSequential}}})
	for i, tx := range en.Txns {
		op, path, seq, ok := PeekPath(EncodeTxn(nil, tx))
		wantPath := RequestPath(tx.Tree.Request)
		if tx.Tree.Type == OpFailedWrite {
			wantPath = "" // its body starts with the write's opcode, not a path
		}
		if !ok || op != tx.Tree.Type || path != wantPath || seq != IsSequentialCreate(tx.Tree.Request) {
			t.Errorf("txn %d: PeekPath = %v %q %v %v, want %v %q %v", i, op, path, seq, ok, tx.Tree.Type, wantPath, IsSequentialCreate(tx.Tree.Request))
		}
	}
}

func TestFailedKeepsIdentityAndDropsPayload(t *testing.T) {
	tx := &Txn{RequestID: 5, Owner: 3, Tree: datatree.Txn{Type: jute.OpSetData, SessionID: 9,
		Request: &jute.SetDataRequest{Path: "/big", Data: make([]byte, 1<<20), Version: -1}}}
	f := Failed(tx, jute.NoNode)
	body, ok := f.Tree.Request.(*FailedWrite)
	if !ok || f.Tree.Type != OpFailedWrite || *body != (FailedWrite{Op: jute.OpSetData, Err: jute.NoNode, Path: "/big"}) {
		t.Fatalf("Failed = %+v", f)
	}
	if f.RequestID != 5 || f.Owner != 3 || f.Tree.SessionID != 9 || tx.Tree.Type != jute.OpSetData {
		t.Fatalf("identity not kept, or the original changed: %+v / %+v", f, tx)
	}
	if n := len(EncodeTxn(nil, f)); n > 100 {
		t.Fatalf("a failed 1 MiB write encodes to %d bytes", n)
	}
	got, err := DecodeTxn(EncodeTxn(nil, f), 0)
	if err != nil || !reflect.DeepEqual(got, f) {
		t.Fatalf("DecodeTxn = %+v, %v", got, err)
	}
}

func FuzzPeekPath(f *testing.F) {
	for _, tx := range sampleEntry().Txns {
		f.Add(EncodeTxn(nil, tx))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		op, path, _, ok := PeekPath(b)
		tx, err := DecodeTxn(b, 0)
		if err != nil || tx.Tree.Type == OpFailedWrite {
			return
		}
		if !ok || op != tx.Tree.Type || path != RequestPath(tx.Tree.Request) {
			t.Fatalf("PeekPath = %v %q %v, decode gives %v %q", op, path, ok, tx.Tree.Type, RequestPath(tx.Tree.Request))
		}
	})
}

func TestEntryRoundTrip(t *testing.T) {
	en := sampleEntry()
	b := en.Encode(nil)
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range en.Txns {
		tx.Tree.Time = en.Time // the entry's time is given to every txn on decode
	}
	if !reflect.DeepEqual(got, en) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, en)
	}
	if again := got.Encode(nil); !bytes.Equal(again, b) {
		t.Fatal("re-encoding differs")
	}
}

// An entry put together from a header and transactions encoded earlier
// (as a leader does with transactions forwarded by a follower) decodes to
// the same transactions.
func TestEntryFromEncodedTxns(t *testing.T) {
	en := sampleEntry()
	b := EntryHeader(nil, 0, en.Time, len(en.Txns))
	for _, tx := range en.Txns {
		b = append(b, EncodeTxn(nil, tx)...)
	}
	got, err := Decode(Seal(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range en.Txns {
		tx.Tree.Time = en.Time
	}
	if !reflect.DeepEqual(got, en) {
		t.Fatalf("decoded %+v\nwant %+v", got, en)
	}
}

func TestDecodeRejects(t *testing.T) {
	good := sampleEntry().Encode(nil)
	cases := map[string][]byte{
		"empty":           nil,
		"unknown kind":    append([]byte{9}, good[1:]...),
		"unknown version": append([]byte{EntryBatch, 3}, good[2:]...),
		"plain version":   append([]byte{EntryBatch, 1}, good[3:]...), // the checksum is trailing bytes then
		"unknown flags":   Seal(append([]byte{EntryBatch, 2, 0x80}, good[3:len(good)-checksumSize]...)),
		"trailing bytes":  append(append([]byte(nil), good...), 0),
		"huge count":      append(append([]byte{EntryBatch, 1}, good[3:11]...), 0x7f, 0xff, 0xff, 0xff),
		"non-txn opcode":  EncodeTxnEntry(&Txn{Tree: datatree.Txn{Type: jute.OpGetData}}),
	}
	for name, b := range cases {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	if _, err := Decode(good[:1]); !errors.Is(err, ErrUnknownEntry) {
		t.Errorf("one byte: %v, want ErrUnknownEntry", err)
	}
	for i := 2; i < len(good); i++ {
		if _, err := Decode(good[:i]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: decoded without error", i, len(good))
		}
	}
}

// EncodeTxnEntry builds an entry around one transaction, writing the body of
// whatever opcode it names (for tests of rejected opcodes).
func EncodeTxnEntry(t *Txn) []byte {
	e := jute.NewEncoder(nil)
	e.Long(int64(t.RequestID))
	e.Long(t.Tree.SessionID)
	e.Long(t.Owner)
	e.Int(int32(t.Tree.Type))
	e.Int(t.Timeout)
	e.Int(0)
	e.String("/x")
	e.Bool(false)
	return Seal(append(EntryHeader(nil, 0, 1, 1), e.Bytes()...))
}

// A flipped bit anywhere in a sealed entry is caught by its checksum, and
// an entry of the earlier, unsealed encoding still decodes.
func TestEntryChecksum(t *testing.T) {
	good := sampleEntry().Encode(nil)
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x10
		if _, err := Decode(bad); err == nil {
			t.Fatalf("byte %d flipped: decoded without error", i)
		}
		if i >= 2 {
			if err := Verify(bad); !errors.Is(err, ErrChecksum) {
				t.Fatalf("byte %d flipped: Verify = %v, want ErrChecksum", i, err)
			}
		}
	}
	if err := Verify(good); err != nil {
		t.Fatalf("Verify(good) = %v", err)
	}
	plain := append([]byte{EntryBatch, entryVersionPlain}, good[3:len(good)-checksumSize]...)
	en, err := Decode(plain)
	if err != nil || len(en.Txns) != len(sampleEntry().Txns) {
		t.Fatalf("unsealed entry: %v", err)
	}
	if err := Verify(plain); err != nil {
		t.Fatalf("Verify(unsealed) = %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(sampleEntry().Encode(nil))
	f.Add([]byte{EntryBatch, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		en, err := Decode(b)
		if err != nil {
			return
		}
		// Non-canonical inputs (a bool byte of 7, a multi end marker with
		// another err) decode too; what must hold is that the canonical
		// encoding decodes back to the same entry.
		again, err := Decode(en.Encode(nil))
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, en) {
			t.Fatalf("re-encoded entry decodes differently")
		}
	})
}

func TestSizeHintIsExactForCommonTxns(t *testing.T) {
	ids := []jute.ID{{Scheme: "digest", ID: "alice:x"}, {Scheme: "ip", ID: "127.0.0.1"}}
	acl := []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "world", ID: "anyone"}}}
	tests := []struct {
		name string
		req  jute.Record
		op   jute.OpCode
	}{
		{"setData", &jute.SetDataRequest{Path: "/a/b", Data: make([]byte, 1000), Version: -1}, jute.OpSetData},
		{"create", &jute.CreateRequest{Path: "/a/c", Data: []byte("x"), ACL: acl, Flags: 2}, jute.OpCreate},
		{"createTTL", &jute.CreateTTLRequest{Path: "/t", Data: nil, ACL: acl, TTL: 5}, jute.OpCreateTTL},
		{"delete", &jute.DeleteRequest{Path: "/a/b", Version: 3}, jute.OpDelete},
		{"closeSession", nil, jute.OpCloseSession},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			txn := &Txn{RequestID: 7, Owner: 1, Tree: datatree.Txn{Type: tc.op, SessionID: 9, Request: tc.req, IDs: ids}}
			if got, want := SizeHint(txn), len(EncodeTxn(nil, txn)); got != want {
				t.Fatalf("SizeHint = %d, encoded size %d", got, want)
			}
		})
	}
}
