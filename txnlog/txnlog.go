// Package txnlog defines the bytes of a replicated log entry: a batch of
// decided write transactions with the proposer-assigned time, each carrying
// the client's request record, the session, the caller's identities and the
// proposer's request id. Every member decodes the same bytes and applies the
// same transactions, so the encoding is the contract between replicas.
//
// Entry layout (big-endian, Jute primitives; see docs/format/txnlog.md):
//
//	byte   kind      EntryBatch (1)
//	byte   version   1
//	long   time      ms since the epoch, from the proposer's clock
//	int    count     number of transactions
//	count × Txn
//
//	Txn:  long requestID | long sessionID | long owner | int opcode |
//	      int timeout | vector<Id> ids | body (the opcode's jute request
//	      record; none for createSession, closeSession and moveSession)
//
// Unknown kinds or versions are rejected with ErrUnknownEntry: a replica that
// cannot understand an entry must stop rather than diverge.
package txnlog

import (
	"errors"
	"fmt"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
)

// Entry kinds.
const (
	// EntryBatch is a batch of transactions.
	EntryBatch byte = 1
	// entryVersionPlain is a batch without a checksum (builds before
	// 2026-11-28); it is still read.
	entryVersionPlain byte = 1
	// entryVersion is a batch with a flags byte after the version, and
	// followed by the CRC-32C of every byte before it (Seal).
	entryVersion byte = 2
)

// FlagStandalone marks an entry proposed by a standalone server: its
// transactions take the zxids of epoch 0 (the previous zxid + 1) on
// whatever member applies it, also after the data directory grew into an
// ensemble, where zxids otherwise take the entry's term as their epoch.
const FlagStandalone byte = 1

// checksumSize is the length of an entry's trailing CRC-32C.
const checksumSize = 4

// OpMoveSession is the internal opcode of a transaction that makes Owner the
// owner of a session, after its client resumed it on that member.
const OpMoveSession jute.OpCode = -100

// OpSetConfig is the internal opcode of a transaction that replaces the
// ensemble's dynamic configuration (/zookeeper/config) after a reconfig. Its
// body is a SetDataRequest carrying the server lines; the applied text ends
// with "version=<zxid in hex>".
const OpSetConfig jute.OpCode = -101

// OpFailedWrite is the internal opcode of a write the leader knew would
// fail when it built the entry (datatree.Tree.Forecast): its body is a
// FailedWrite, so the log holds the error and the path instead of the
// write's payload, as ZooKeeper logs an error transaction.
const OpFailedWrite jute.OpCode = -102

// OpInitConfig is the internal opcode of the transaction an ensemble's
// leader proposes to seed /zookeeper/config from its configuration files
// when the node is still empty. Its body is a SetDataRequest carrying the
// configuration text (server lines and "version=<hex>"). It consumes no
// zxid, and every member applies it only while the node is empty, so the
// node changes through the log alone.
const OpInitConfig jute.OpCode = -103

// FailedWrite is the body of an OpFailedWrite transaction: the write's own
// opcode and path, and the error every member answers it with.
type FailedWrite struct {
	Op   jute.OpCode
	Err  jute.Code
	Path string
}

// Encode implements jute.Record.
func (r *FailedWrite) Encode(e *jute.Encoder) {
	e.Int(int32(r.Op))
	e.Int(int32(r.Err))
	e.String(r.Path)
}

// Decode implements jute.Record.
func (r *FailedWrite) Decode(d *jute.Decoder) {
	r.Op = jute.OpCode(d.Int())
	r.Err = jute.Code(d.Int())
	r.Path = d.String()
}

// Failed returns the OpFailedWrite transaction that stands for t, which
// fails with code: the same request id, session, owner and identities.
func Failed(t *Txn, code jute.Code) *Txn {
	f := &FailedWrite{Op: t.Tree.Type, Err: code, Path: RequestPath(t.Tree.Request)}
	out := *t
	out.Tree.Type = OpFailedWrite
	out.Tree.Request = f
	return &out
}

// RequestPath returns the path a single-path write request names, "" for
// others (multi, session transactions).
func RequestPath(r jute.Record) string {
	switch r := r.(type) {
	case *jute.CreateRequest:
		return r.Path
	case *jute.CreateTTLRequest:
		return r.Path
	case *jute.SetDataRequest:
		return r.Path
	case *jute.DeleteRequest:
		return r.Path
	case *jute.SetACLRequest:
		return r.Path
	case *jute.CheckVersionRequest:
		return r.Path
	case *jute.PathRequest:
		return r.Path
	}
	return ""
}

// ErrUnknownEntry is returned for an entry kind or version this build does
// not know.
var ErrUnknownEntry = errors.New("txnlog: unknown entry kind or version")

// Txn is one decided write: the tree transaction plus what the log carries
// around it.
type Txn struct {
	// RequestID identifies the proposer's waiter (0 for none). The top 8 bits
	// are the proposing member's id, so ids are unique across members.
	RequestID uint64
	// Owner is the member whose client connection issued the transaction
	// (the session's new owner for createSession and moveSession).
	Owner int64
	// Timeout is the negotiated session timeout (ms) of a createSession txn.
	Timeout int32
	// Tree is the transaction the znode tree applies. Its Time is set from
	// the entry when decoded.
	Tree datatree.Txn
}

// Entry is a batch of transactions decided together. Flags is
// FlagStandalone or 0 (always 0 for entries of the plain version).
type Entry struct {
	Time  int64
	Flags byte
	Txns  []*Txn
}

// minTxnSize is the smallest encoded Txn (fixed fields plus an empty vector).
const minTxnSize = 8 + 8 + 8 + 4 + 4 + 4

// Encode appends the entry's encoding to dst.
func (en *Entry) Encode(dst []byte) []byte {
	start := len(dst)
	dst = EntryHeader(dst, en.Flags, en.Time, len(en.Txns))
	for _, t := range en.Txns {
		dst = EncodeTxn(dst, t)
	}
	return append(dst[:start], Seal(dst[start:])...)
}

// EntryHeader appends the start of an entry of count transactions to dst;
// the entry is complete once count transactions (EncodeTxn, or encodings
// made earlier) follow it and Seal has appended its checksum.
func EntryHeader(dst []byte, flags byte, time int64, count int) []byte {
	e := jute.NewEncoder(append(dst, EntryBatch, entryVersion, flags))
	e.Long(time)
	e.Int(int32(count))
	return e.Bytes()
}

// EncodeTxn appends one transaction's encoding to dst. The entry's time is
// not part of it.
func EncodeTxn(dst []byte, t *Txn) []byte {
	e := jute.NewEncoder(dst)
	encodeTxn(e, t)
	return e.Bytes()
}

// SizeHint estimates the encoded size of t, so that EncodeTxn can be given
// a buffer that needs no growing for the common transactions: exact for
// setData, create and delete, a guess for the rest.
func SizeHint(t *Txn) int {
	n := txnHeaderSize
	for _, id := range t.Tree.IDs {
		n += 8 + len(id.Scheme) + len(id.ID)
	}
	switch r := t.Tree.Request.(type) {
	case *jute.SetDataRequest:
		n += 12 + len(r.Path) + len(r.Data)
	case *jute.CreateRequest:
		n += 12 + len(r.Path) + len(r.Data) + aclsSize(r.ACL)
	case *jute.CreateTTLRequest:
		n += 20 + len(r.Path) + len(r.Data) + aclsSize(r.ACL)
	case *jute.DeleteRequest:
		n += 8 + len(r.Path)
	case nil:
	default:
		n += 256
	}
	return n
}

// txnHeaderSize is the encoded size of a transaction before its identities
// and body: request id, session, owner, type, timeout, identity count.
const txnHeaderSize = 8 + 8 + 8 + 4 + 4 + 4

func aclsSize(acls []jute.ACL) int {
	n := 4
	for _, a := range acls {
		n += 12 + len(a.ID.Scheme) + len(a.ID.ID)
	}
	return n
}

func encodeTxn(e *jute.Encoder, t *Txn) {
	e.Long(int64(t.RequestID))
	e.Long(t.Tree.SessionID)
	e.Long(t.Owner)
	e.Int(int32(t.Tree.Type))
	e.Int(t.Timeout)
	e.Int(int32(len(t.Tree.IDs)))
	for i := range t.Tree.IDs {
		t.Tree.IDs[i].Encode(e)
	}
	if t.Tree.Request != nil {
		t.Tree.Request.Encode(e)
	}
}

// Decode parses a batch entry, checking its checksum. It never panics on
// malformed input.
func Decode(b []byte) (*Entry, error) {
	if len(b) < 2 || b[0] != EntryBatch || (b[1] != entryVersion && b[1] != entryVersionPlain) {
		return nil, ErrUnknownEntry
	}
	start, flags := 2, byte(0)
	if b[1] == entryVersion {
		body, err := verify(b)
		if err != nil {
			return nil, err
		}
		if len(body) < 3 {
			return nil, fmt.Errorf("txnlog: entry of %d bytes", len(b))
		}
		b, start, flags = body, 3, body[2]
	}
	if flags&^FlagStandalone != 0 {
		return nil, fmt.Errorf("txnlog: unknown entry flags %#x", flags)
	}
	d := jute.NewDecoder(b[start:])
	en := &Entry{Time: d.Long(), Flags: flags}
	n := int(d.Int())
	if d.Err() == nil && (n < 0 || n > d.Remaining()/minTxnSize) {
		return nil, fmt.Errorf("txnlog: bad txn count %d", n)
	}
	en.Txns = make([]*Txn, 0, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		t, err := decodeTxn(d, en.Time)
		if err != nil {
			return nil, fmt.Errorf("txnlog: txn %d: %w", i, err)
		}
		en.Txns = append(en.Txns, t)
	}
	if err := d.Finish(true); err != nil {
		return nil, fmt.Errorf("txnlog: decode entry: %w", err)
	}
	return en, nil
}

// DecodeTxn parses one transaction encoded by EncodeTxn, with the entry
// time given. It never panics on malformed input.
func DecodeTxn(b []byte, time int64) (*Txn, error) {
	d := jute.NewDecoder(b)
	t, err := decodeTxn(d, time)
	if err != nil {
		return nil, fmt.Errorf("txnlog: decode txn: %w", err)
	}
	if err := d.Finish(true); err != nil {
		return nil, fmt.Errorf("txnlog: decode txn: %w", err)
	}
	return t, nil
}

// PeekPath returns the opcode of an encoded transaction and, for a write
// whose request starts with its path (every single-path write), that path
// and whether it is a sequential create, without decoding the data and
// ACLs. ok is false for malformed input.
func PeekPath(b []byte) (op jute.OpCode, path string, sequential, ok bool) {
	d := jute.NewDecoder(b)
	d.Long() // request id
	d.Long() // session
	d.Long() // owner
	op = jute.OpCode(d.Int())
	d.Int() // timeout
	nids := int(d.Int())
	if d.Err() != nil || nids < 0 || nids > d.Remaining()/8 {
		return op, "", false, false
	}
	for i := 0; i < nids; i++ {
		var id jute.ID
		id.Decode(d)
	}
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		path = d.String()
		d.SkipBuffer() // data
		skipACLs(d)
		sequential = jute.CreateMode(d.Int()).IsSequential()
	case jute.OpDelete, jute.OpSetData, jute.OpSetACL, jute.OpCheck, jute.OpDeleteContainer, OpSetConfig, OpInitConfig:
		path = d.String()
	}
	return op, path, sequential, d.Err() == nil
}

// skipACLs reads past a vector<ACL>.
func skipACLs(d *jute.Decoder) {
	n := int(d.Int())
	if n < 0 || n > d.Remaining()/12 {
		return
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		var a jute.ACL
		a.Decode(d)
	}
}

// IsSequentialCreate reports whether r is a create request with a
// sequential mode.
func IsSequentialCreate(r jute.Record) bool {
	switch r := r.(type) {
	case *jute.CreateRequest:
		return r.Flags.IsSequential()
	case *jute.CreateTTLRequest:
		return r.Flags.IsSequential()
	}
	return false
}

func decodeTxn(d *jute.Decoder, time int64) (*Txn, error) {
	t := &Txn{RequestID: uint64(d.Long())}
	t.Tree.SessionID = d.Long()
	t.Owner = d.Long()
	t.Tree.Type = jute.OpCode(d.Int())
	t.Tree.Time = time
	t.Timeout = d.Int()
	nids := int(d.Int())
	if nids < 0 || nids > d.Remaining()/8 {
		return nil, fmt.Errorf("bad id count %d", nids)
	}
	for i := 0; i < nids && d.Err() == nil; i++ {
		var id jute.ID
		id.Decode(d)
		t.Tree.IDs = append(t.Tree.IDs, id)
	}
	body, err := NewBody(t.Tree.Type)
	if err != nil {
		return nil, err
	}
	if body != nil {
		body.Decode(d)
		t.Tree.Request = body
	}
	return t, d.Err()
}

// NewBody returns an empty request record for a transaction opcode, nil for
// opcodes whose transaction has no body, or an error for opcodes that are
// not transactions.
func NewBody(op jute.OpCode) (jute.Record, error) {
	switch op {
	case jute.OpCreateSession, jute.OpCloseSession, OpMoveSession:
		return nil, nil
	case jute.OpDeleteContainer:
		return &jute.PathRequest{}, nil
	case OpFailedWrite:
		return &FailedWrite{}, nil
	case OpSetConfig, OpInitConfig:
		return &jute.SetDataRequest{}, nil
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
		jute.OpDelete, jute.OpSetData, jute.OpSetACL, jute.OpCheck, jute.OpMulti,
		jute.OpReconfig:
		return jute.NewRequest(op), nil
	}
	return nil, fmt.Errorf("opcode %v is not a transaction", op)
}
