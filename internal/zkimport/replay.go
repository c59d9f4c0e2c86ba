package zkimport

import (
	"fmt"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/jute"
)

// applyTxn decodes one logged transaction and applies it as ZooKeeper's
// FileTxnSnapLog.processTransaction does, tolerating the replays of a
// fuzzy snapshot. It returns the header.
func (d *db) applyTxn(body []byte) (TxnHeader, error) {
	t, err := DecodeTxn(body)
	if err != nil {
		return TxnHeader{}, err
	}
	return t.Header, d.apply(t)
}

// apply applies one decoded transaction.
func (d *db) apply(t *Txn) error {
	var err error
	h := t.Header
	switch h.Type {
	case jute.OpCreateSession:
		d.sessions[h.ClientID] = t.Op.Timeout
	case jute.OpCloseSession:
		d.closeSession(h.ClientID, h.Zxid)
	case jute.OpMulti:
		err = d.applyMulti(h, t.Multi)
	default:
		err = d.applyOp(h, t.Op)
	}
	if err != nil {
		return fmt.Errorf("zxid %#x type %d: %w", h.Zxid, h.Type, err)
	}
	d.lastZxid = max(d.lastZxid, h.Zxid)
	return nil
}

// applyMulti applies a MultiTxn: when any element is an error txn the
// multi failed and nothing is applied.
func (d *db) applyMulti(h TxnHeader, ops []TxnOp) error {
	for _, op := range ops {
		if op.Type == jute.OpError {
			return nil
		}
	}
	for _, op := range ops {
		if err := d.applyOp(h, op); err != nil {
			return err
		}
	}
	return nil
}

// applyOp applies one data-tree transaction (a top-level one or an element
// of a multi).
func (d *db) applyOp(h TxnHeader, op TxnOp) error {
	switch op.Type {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		return d.applyCreate(h, op)
	case jute.OpDelete, jute.OpDeleteContainer:
		d.remove(op.Path, h.Zxid)
	case jute.OpSetData, jute.OpReconfig:
		d.setData(op.Path, op.Data, op.Version, h.Zxid, h.Time)
	case jute.OpSetACL:
		d.setACL(op.Path, op.ACL, op.Version)
	case jute.OpCheck, jute.OpError:
		// no effect on the tree
	default:
		return fmt.Errorf("%w %d", ErrUnsupportedTxn, op.Type)
	}
	return nil
}

// OwnerOf returns the ephemeralOwner ZooKeeper stores for the node a
// create transaction makes in session: the session for an ephemeral
// create, the container marker, the TTL encoding, or 0.
func OwnerOf(op TxnOp, session int64) int64 {
	switch op.Type {
	case jute.OpCreateContainer:
		return jute.ContainerOwner
	case jute.OpCreateTTL:
		return jute.TTLOwnerMask | op.TTL
	case jute.OpCreate, jute.OpCreate2:
		if op.Ephemeral {
			return session
		}
	}
	return 0
}

// applyCreate handles CreateTxn (create, create2; the V0 form without
// parentCVersion too), CreateContainerTxn and CreateTTLTxn.
func (d *db) applyCreate(h TxnHeader, op TxnOp) error {
	if datatree.ValidatePath(op.Path) != jute.OK {
		return fmt.Errorf("%w: create with invalid path %q", ErrBadLog, op.Path)
	}
	if len(op.ACL) == 0 {
		return fmt.Errorf("%w: create %s with an empty ACL", ErrBadLog, op.Path)
	}
	existed := d.nodes[op.Path] != nil
	owner := OwnerOf(op, h.ClientID)
	if !d.create(op.Path, op.Data, op.ACL, owner, op.ParentCVersion, h.Zxid, h.Time) && existed && op.Type == jute.OpCreate {
		d.fixParent(op.Path, op.ParentCVersion, h.Zxid)
	}
	return nil
}
