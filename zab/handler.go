package zab

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
)

// Handler receives what an observer learns from the ZooKeeper leader. All
// calls come from one goroutine, in zxid order.
type Handler interface {
	// LastZxid is the zxid of the last transaction the handler holds (0 when empty);
	// the observer presents it to the leader (ACKEPOCH) so that the leader picks DIFF, TRUNC or SNAP.
	LastZxid() int64
	// Snapshot replaces the whole state with the one in r: r yields exactly the bytes of
	// ZooKeeper's SerializeUtils.serializeSnapshot (session count and (id, timeout) pairs, then
	// DataTree.serialize: the ACL cache, the nodes, the "/" terminator record) as a SNAP sync sends
	// them; the handler reads exactly that much and no further (r is a *bufio.Reader shared
	// with the protocol; it must not be wrapped in another read-ahead buffer). zxid is the
	// snapshot's last zxid (the SNAP packet's zxid).
	Snapshot(zxid int64, r *bufio.Reader) error
	// Truncate asks the handler to drop every transaction after zxid (TRUNC). A handler that
	// cannot returns an error; the observer then reconnects presenting zxid 0 to get a SNAP.
	Truncate(zxid int64) error
	// Txn applies one committed transaction: data is the packet's data as ZooKeeper's
	// Util.marshallTxnEntry wrote it (TxnHeader, the txn record, and in 3.6+ an optional
	// TxnDigest), the same bytes as one entry of a ZooKeeper log.<zxid> file.
	// It returns an error if the transaction cannot be applied or the state diverges.
	Txn(zxid int64, data []byte) error
	// UpToDate says the sync phase is over (UPTODATE): the state is current.
	UpToDate()
}

// TxnHeader is the header that starts every transaction's bytes
// (zookeeper.jute's TxnHeader: long clientId, int cxid, long zxid, long
// time, int type). A caller that sent a request through Observer.Request
// learns that it was committed when a Txn's header carries its session
// (ClientID) and Cxid; a failed request comes back as an error txn (Type
// -1) with the same pair.
type TxnHeader struct {
	ClientID int64
	Cxid     int32
	Zxid     int64
	Time     int64
	Type     int32
}

// TxnHeaderSize is the encoded size of a TxnHeader.
const TxnHeaderSize = 32

// ParseTxnHeader reads the header at the start of a transaction's bytes.
func ParseTxnHeader(data []byte) (TxnHeader, error) {
	if len(data) < TxnHeaderSize {
		return TxnHeader{}, fmt.Errorf("zab: transaction of %d bytes has no header", len(data))
	}
	be := binary.BigEndian
	return TxnHeader{
		ClientID: int64(be.Uint64(data)),
		Cxid:     int32(be.Uint32(data[8:])),
		Zxid:     int64(be.Uint64(data[12:])),
		Time:     int64(be.Uint64(data[20:])),
		Type:     int32(be.Uint32(data[28:])),
	}, nil
}

// opReconfig is the transaction type of a reconfig (ZooDefs.OpCode).
const opReconfig = 16

// reconfigView returns the configuration a reconfig transaction
// activates: its SetDataTxn's data (after the header: ustring path, buffer
// data, int version).
func reconfigView(txn []byte) (View, error) {
	h, err := ParseTxnHeader(txn)
	if err != nil {
		return View{}, err
	}
	if h.Type != opReconfig {
		return View{}, fmt.Errorf("zab: activation of a transaction of type %d, not reconfig", h.Type)
	}
	r := bufio.NewReader(bytes.NewReader(txn[TxnHeaderSize:]))
	if _, err := readBuffer(r, len(txn)); err != nil {
		return View{}, fmt.Errorf("zab: reconfig path: %w", err)
	}
	data, err := readBuffer(r, len(txn))
	if err != nil {
		return View{}, fmt.Errorf("zab: reconfig data: %w", err)
	}
	return ParseView(string(data))
}
