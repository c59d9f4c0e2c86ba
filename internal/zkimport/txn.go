package zkimport

import (
	"errors"
	"fmt"

	"github.com/zkserverd/zkserverd/jute"
)

// ErrUnsupportedTxn reports a transaction type ZooKeeper does not log (or
// that may not appear where it was found, such as a session txn inside a
// multi).
var ErrUnsupportedTxn = errors.New("zkimport: unsupported transaction type")

// TxnHeader is ZooKeeper's TxnHeader: who asked (session and cxid), the
// zxid the leader assigned, the leader's wall time (ms) and the type.
type TxnHeader struct {
	ClientID int64
	Cxid     int32
	Zxid     int64
	Time     int64
	Type     jute.OpCode
}

// TxnOp is one decoded transaction record, a top-level one or an element
// of a MultiTxn. Which fields are set depends on Type:
//
//	create, create2   CreateTxn: Path, Data, ACL, Ephemeral, ParentCVersion
//	createContainer   CreateContainerTxn: Path, Data, ACL, ParentCVersion
//	createTTL         CreateTTLTxn: Path, Data, ACL, ParentCVersion, TTL
//	delete, deleteContainer  DeleteTxn: Path
//	setData, reconfig SetDataTxn: Path, Data, Version (the new version)
//	setACL            SetACLTxn: Path, ACL, Version (the new aversion)
//	check             CheckVersionTxn: Path, Version (the node's version + 1)
//	error             ErrorTxn: Err
//	createSession     CreateSessionTxn: Timeout
//	closeSession      CloseSessionTxn (3.6+): Paths; nil when not logged
type TxnOp struct {
	Type      jute.OpCode
	Path      string
	Data      []byte // nil for a null buffer
	ACL       []jute.ACL
	Ephemeral bool
	// ParentCVersion is the parent's stored cversion after the create; -1
	// for a version-0 CreateTxn, which does not carry it.
	ParentCVersion int32
	TTL            int64
	Version        int32
	Timeout        int32
	Err            jute.Code
	Paths          []string
}

// TxnDigest is the digest of the whole tree after the transaction, as the
// leader computed it (3.6+, when zookeeper.digest.enabled): Version 2 is
// DigestCalculator's CRC32-based digest.
type TxnDigest struct {
	Version int32
	Tree    int64
}

// Txn is one decoded log entry, as Util.marshallTxnEntry wrote it: the
// header, the record (Op, or Multi for a multi) and the optional digest.
type Txn struct {
	Header TxnHeader
	Op     TxnOp   // every type but multi; Op.Type == Header.Type
	Multi  []TxnOp // the elements of a multi, in order
	Digest *TxnDigest
}

// digestSize is the encoded size of a TxnDigest (int version, long digest).
const digestSize = 12

// DecodeTxn decodes one transaction entry: the bytes of one record of a
// log.<zxid> file, or of a Zab proposal. It never panics; a truncated or
// malformed entry, or bytes left over after the record and digest, give an
// error wrapping ErrBadLog (or ErrUnsupportedTxn).
func DecodeTxn(body []byte) (*Txn, error) {
	dec := jute.NewDecoder(body)
	t := &Txn{Header: decodeHeader(dec)}
	if err := dec.Err(); err != nil {
		return nil, fmt.Errorf("%w: txn header: %w", ErrBadLog, err)
	}
	var err error
	switch t.Header.Type {
	case jute.OpMulti:
		t.Multi, err = decodeMulti(dec)
	case jute.OpCloseSession:
		t.Op = decodeCloseSession(dec)
	default:
		t.Op, err = decodeOp(t.Header.Type, dec, true)
	}
	if err == nil {
		t.Digest, err = decodeDigest(dec)
	}
	if err != nil {
		return nil, fmt.Errorf("zxid %#x type %d: %w", t.Header.Zxid, t.Header.Type, err)
	}
	return t, nil
}

// decodeHeader reads a TxnHeader.
func decodeHeader(dec *jute.Decoder) TxnHeader {
	return TxnHeader{
		ClientID: dec.Long(), Cxid: dec.Int(), Zxid: dec.Long(), Time: dec.Long(),
		Type: jute.OpCode(dec.Int()),
	}
}

// decodeDigest reads the optional TxnDigest that ends an entry.
func decodeDigest(dec *jute.Decoder) (*TxnDigest, error) {
	switch dec.Remaining() {
	case 0:
		return nil, nil
	case digestSize:
		return &TxnDigest{Version: dec.Int(), Tree: dec.Long()}, nil
	}
	return nil, fmt.Errorf("%w: %d bytes after the record", ErrBadLog, dec.Remaining())
}

// decodeCloseSession reads a CloseSessionTxn when one was logged: 3.6+
// logs the paths to delete, older servers nothing. A body that does not
// read as one (what is left is then at most a digest) is the old form.
func decodeCloseSession(dec *jute.Decoder) TxnOp {
	op := TxnOp{Type: jute.OpCloseSession}
	if dec.Remaining() == 0 {
		return op
	}
	probe := jute.NewDecoder(dec.Rest())
	probe.Strings()
	if probe.Err() == nil && (probe.Remaining() == 0 || probe.Remaining() == digestSize) {
		op.Paths = dec.Strings()
		if op.Paths == nil {
			op.Paths = []string{}
		}
	}
	return op
}

// decodeMulti reads a MultiTxn: a vector of (type, serialized record).
func decodeMulti(dec *jute.Decoder) ([]TxnOp, error) {
	n := dec.Int()
	if n < -1 || int64(n)*8 > int64(dec.Remaining()) {
		return nil, fmt.Errorf("%w: multi of %d", ErrBadLog, n)
	}
	ops := make([]TxnOp, 0, max(n, 0))
	for i := int32(0); i < n; i++ {
		typ, data := jute.OpCode(dec.Int()), dec.Buffer()
		if err := dec.Err(); err != nil {
			return nil, fmt.Errorf("%w: multi: %w", ErrBadLog, err)
		}
		if !multiElement(typ) {
			return nil, fmt.Errorf("%w %d in a multi", ErrUnsupportedTxn, typ)
		}
		sub := jute.NewDecoder(data)
		op, err := decodeOp(typ, sub, false)
		if err == nil && sub.Remaining() != 0 {
			err = fmt.Errorf("%w: %d bytes after multi element %d", ErrBadLog, sub.Remaining(), i)
		}
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// multiElement reports whether DataTree accepts typ inside a multi.
func multiElement(typ jute.OpCode) bool {
	switch typ {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateTTL, jute.OpCreateContainer,
		jute.OpDelete, jute.OpDeleteContainer, jute.OpSetData, jute.OpError, jute.OpCheck:
		return true
	}
	return false
}

// decodeOp reads the record of a transaction of type typ. topLevel says
// whether a digest may follow (it matters for telling a version-0
// CreateTxn apart).
func decodeOp(typ jute.OpCode, dec *jute.Decoder, topLevel bool) (TxnOp, error) {
	op := TxnOp{Type: typ}
	switch typ {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		decodeCreate(&op, dec, topLevel)
	case jute.OpDelete, jute.OpDeleteContainer:
		op.Path = dec.String()
	case jute.OpSetData, jute.OpReconfig:
		op.Path, op.Data, op.Version = dec.String(), dec.Buffer(), dec.Int()
	case jute.OpSetACL:
		op.Path, op.ACL, op.Version = dec.String(), decodeACLs(dec), dec.Int()
	case jute.OpCheck:
		op.Path, op.Version = dec.String(), dec.Int()
	case jute.OpError:
		op.Err = jute.Code(dec.Int())
	case jute.OpCreateSession:
		op.Timeout = dec.Int()
	default:
		return op, fmt.Errorf("%w %d", ErrUnsupportedTxn, typ)
	}
	if err := dec.Err(); err != nil {
		return op, fmt.Errorf("%w: %s: %w", ErrBadLog, typ, err)
	}
	return op, nil
}

// decodeCreate reads CreateTxn (and its version 0 without
// parentCVersion), CreateContainerTxn and CreateTTLTxn.
func decodeCreate(op *TxnOp, dec *jute.Decoder, topLevel bool) {
	op.Path, op.Data, op.ACL = dec.String(), dec.Buffer(), decodeACLs(dec)
	op.ParentCVersion = -1
	switch op.Type {
	case jute.OpCreate, jute.OpCreate2:
		op.Ephemeral = dec.Bool()
		rest := dec.Remaining()
		if rest == 4 || (topLevel && rest == 4+digestSize) {
			op.ParentCVersion = dec.Int()
		}
	case jute.OpCreateContainer:
		op.ParentCVersion = dec.Int()
	case jute.OpCreateTTL:
		op.ParentCVersion = dec.Int()
		op.TTL = dec.Long()
		if dec.Err() == nil && (op.TTL <= 0 || op.TTL > jute.MaxTTL) {
			dec.Fail(fmt.Errorf("ttl %d", op.TTL))
		}
	}
}

// decodeACLs reads a vector of ACL records.
func decodeACLs(dec *jute.Decoder) []jute.ACL {
	n := dec.Int()
	if n < -1 || int64(n)*12 > int64(dec.Remaining()) {
		dec.Fail(fmt.Errorf("ACL vector of %d", n))
		return nil
	}
	list := make([]jute.ACL, 0, max(n, 0))
	for i := int32(0); i < n; i++ {
		var a jute.ACL
		a.Decode(dec)
		list = append(list, a)
	}
	return list
}
