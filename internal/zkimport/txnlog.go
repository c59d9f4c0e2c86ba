package zkimport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
)

// maxTxn bounds one logged transaction; ZooKeeper's own limit
// (jute.maxbuffer plus headroom) is far smaller by default.
const maxTxn = 1 << 30

// endOfRecord follows every logged transaction ('B').
const endOfRecord = 0x42

// txnHeader is ZooKeeper's TxnHeader.
type txnHeader struct {
	clientID int64
	cxid     int32
	zxid     int64
	time     int64
	typ      jute.OpCode
}

// logReader iterates over the entries of one log.<zxid> file.
type logReader struct {
	r    *bufio.Reader
	name string
	pos  int64
	onIO func(int64)
}

// newLogReader checks the file header (magic "ZKLG", version 2, dbid).
func newLogReader(r io.Reader, name string, onIO func(int64)) (*logReader, error) {
	l := &logReader{r: bufio.NewReaderSize(r, 256<<10), name: name, onIO: onIO}
	var hdr [16]byte
	if _, err := io.ReadFull(l.r, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: %s: header: %w", ErrBadLog, name, err)
	}
	l.advance(16)
	magic, version := int32(binary.BigEndian.Uint32(hdr[:])), int32(binary.BigEndian.Uint32(hdr[4:]))
	if magic != logMagic || version != fileVersion {
		return nil, fmt.Errorf("%w: %s: magic %#x version %d", ErrBadLog, name, magic, version)
	}
	return l, nil
}

func (l *logReader) advance(n int) {
	l.pos += int64(n)
	if l.onIO != nil {
		l.onIO(int64(n))
	}
}

// next returns the bytes of the next transaction (TxnHeader, record and
// optional digest), or io.EOF where ZooKeeper stops reading the file: at the
// end, at the zero padding of a preallocated file, or at a partial last
// entry. A checksum mismatch or an impossible length is an error, as it is
// for ZooKeeper.
func (l *logReader) next() ([]byte, error) {
	var head [12]byte
	if _, err := io.ReadFull(l.r, head[:]); err != nil {
		return nil, io.EOF
	}
	l.advance(12)
	crc := int64(binary.BigEndian.Uint64(head[:]))
	n := int32(binary.BigEndian.Uint32(head[8:]))
	switch {
	case n == 0 || n == -1:
		return nil, io.EOF
	case n < 0 || n > maxTxn:
		return nil, fmt.Errorf("%w: %s: entry length %d at byte %d", ErrBadLog, l.name, n, l.pos-4)
	}
	body, err := readChunked(l.r, int(n))
	if err != nil {
		return nil, io.EOF // torn write at the tail
	}
	l.advance(len(body))
	eor, err := l.r.ReadByte()
	if err != nil || eor != endOfRecord {
		return nil, io.EOF // partial last transaction
	}
	l.advance(1)
	if got := int64(adler32.Checksum(body)); got != crc {
		return nil, fmt.Errorf("%w: %s: checksum mismatch at byte %d", ErrBadLog, l.name, l.pos)
	}
	return body, nil
}

// readChunked reads exactly n bytes, allocating only as data arrives.
func readChunked(r io.Reader, n int) ([]byte, error) {
	const chunk = 64 << 10
	b := make([]byte, 0, min(n, chunk))
	for len(b) < n {
		k := min(n-len(b), max(chunk, len(b)))
		start := len(b)
		b = append(b, make([]byte, k)...)
		if _, err := io.ReadFull(r, b[start:]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// errUnsupportedTxn reports a transaction type the importer does not know.
var errUnsupportedTxn = errors.New("zkimport: unsupported transaction type")

// decodeHeader reads a TxnHeader.
func decodeHeader(dec *jute.Decoder) txnHeader {
	return txnHeader{
		clientID: dec.Long(), cxid: dec.Int(), zxid: dec.Long(), time: dec.Long(),
		typ: jute.OpCode(dec.Int()),
	}
}

// applyTxn decodes one logged transaction and applies it as ZooKeeper's
// FileTxnSnapLog.processTransaction does. It returns the header.
func (d *db) applyTxn(body []byte) (txnHeader, error) {
	dec := jute.NewDecoder(body)
	h := decodeHeader(dec)
	if err := dec.Err(); err != nil {
		return h, fmt.Errorf("%w: txn header: %w", ErrBadLog, err)
	}
	var err error
	switch h.typ {
	case jute.OpCreateSession:
		timeout := dec.Int()
		if err = dec.Err(); err == nil {
			d.sessions[h.clientID] = timeout
		}
	case jute.OpCloseSession:
		d.closeSession(h.clientID, h.zxid)
	case jute.OpMulti:
		err = d.applyMulti(h, dec)
	default:
		err = d.applyOp(h, h.typ, dec)
	}
	if err != nil {
		return h, fmt.Errorf("zxid %#x type %d: %w", h.zxid, h.typ, err)
	}
	d.lastZxid = max(d.lastZxid, h.zxid)
	return h, nil
}

// subTxn is one element of a MultiTxn.
type subTxn struct {
	typ  jute.OpCode
	data []byte
}

// applyMulti applies a MultiTxn: when any element is an error txn the
// multi failed and nothing is applied.
func (d *db) applyMulti(h txnHeader, dec *jute.Decoder) error {
	n := dec.Int()
	if n < -1 || int64(n)*8 > int64(dec.Remaining()) {
		return fmt.Errorf("%w: multi of %d", ErrBadLog, n)
	}
	subs := make([]subTxn, 0, max(n, 0))
	failed := false
	for i := int32(0); i < n; i++ {
		s := subTxn{typ: jute.OpCode(dec.Int()), data: dec.Buffer()}
		failed = failed || s.typ == jute.OpError
		subs = append(subs, s)
	}
	if err := dec.Err(); err != nil {
		return fmt.Errorf("%w: multi: %w", ErrBadLog, err)
	}
	if failed {
		return nil
	}
	for _, s := range subs {
		if err := d.applyOp(h, s.typ, jute.NewDecoder(s.data)); err != nil {
			return err
		}
	}
	return nil
}

// decodeACLs reads a vector of ACL records.
func decodeACLs(dec *jute.Decoder) []jute.ACL {
	n := dec.Int()
	if n < -1 || int64(n)*12 > int64(dec.Remaining()) {
		dec.Fail(fmt.Errorf("%w: ACL vector of %d", ErrBadLog, n))
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

// applyOp applies one data-tree transaction (a top-level one or an element
// of a multi). Every field is decoded before the tree changes.
func (d *db) applyOp(h txnHeader, typ jute.OpCode, dec *jute.Decoder) error {
	switch typ {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		return d.applyCreate(h, typ, dec)
	case jute.OpDelete, jute.OpDeleteContainer:
		path := dec.String()
		if err := dec.Err(); err != nil {
			return fmt.Errorf("%w: delete: %w", ErrBadLog, err)
		}
		d.remove(path, h.zxid)
	case jute.OpSetData, jute.OpReconfig:
		path, data, version := dec.String(), dec.Buffer(), dec.Int()
		if err := dec.Err(); err != nil {
			return fmt.Errorf("%w: setData: %w", ErrBadLog, err)
		}
		d.setData(path, data, version, h.zxid, h.time)
	case jute.OpSetACL:
		path, acl, version := dec.String(), decodeACLs(dec), dec.Int()
		if err := dec.Err(); err != nil {
			return fmt.Errorf("%w: setACL: %w", ErrBadLog, err)
		}
		d.setACL(path, acl, version)
	case jute.OpCheck, jute.OpError:
		// no effect on the tree
	default:
		return fmt.Errorf("%w %d", errUnsupportedTxn, typ)
	}
	return nil
}

// applyCreate handles CreateTxn (create, create2; the V0 form without
// parentCVersion too), CreateContainerTxn and CreateTTLTxn.
func (d *db) applyCreate(h txnHeader, typ jute.OpCode, dec *jute.Decoder) error {
	path, data, acl := dec.String(), dec.Buffer(), decodeACLs(dec)
	var owner int64
	parentCVersion := int32(-1)
	switch typ {
	case jute.OpCreate, jute.OpCreate2:
		if dec.Bool() {
			owner = h.clientID
		}
		if dec.Remaining() >= 4 {
			parentCVersion = dec.Int()
		}
	case jute.OpCreateContainer:
		owner = jute.ContainerOwner
		parentCVersion = dec.Int()
	case jute.OpCreateTTL:
		parentCVersion = dec.Int()
		ttl := dec.Long()
		if ttl <= 0 || ttl > jute.MaxTTL {
			dec.Fail(fmt.Errorf("%w: ttl %d", ErrBadLog, ttl))
		}
		owner = jute.TTLOwnerMask | ttl
	}
	if err := dec.Err(); err != nil {
		return fmt.Errorf("%w: create: %w", ErrBadLog, err)
	}
	if datatree.ValidatePath(path) != jute.OK {
		return fmt.Errorf("%w: create with invalid path %q", ErrBadLog, path)
	}
	if len(acl) == 0 {
		return fmt.Errorf("%w: create %s with an empty ACL", ErrBadLog, path)
	}
	existed := d.nodes[path] != nil
	if !d.create(path, data, acl, owner, parentCVersion, h.zxid, h.time) && existed && typ == jute.OpCreate {
		d.fixParent(path, parentCVersion, h.zxid)
	}
	return nil
}
