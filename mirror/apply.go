package mirror

import (
	"errors"
	"fmt"
	"slices"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/internal/zkimport"
	"github.com/zkserverd/zkserverd/jute"
)

// configPath is ZooDefs.CONFIG_NODE, the node a reconfig writes.
const configPath = "/zookeeper/config"

// errUnsupported reports a ZooKeeper txn the mirror has no translation for.
var errUnsupported = errors.New("no translation for this transaction type")

// apply applies one decoded transaction to tree and checks it.
func (s *State) apply(tree *datatree.Tree, t *zkimport.Txn) error {
	h := t.Header
	switch h.Type {
	case jute.OpCreateSession:
		s.Sessions().Add(h.ClientID, t.Op.Timeout)
		s.notify(appliedOf(h, &datatree.Result{}, t.Op.Timeout))
	case jute.OpError:
		s.notify(appliedOf(h, &datatree.Result{Err: t.Op.Err}, 0))
	case jute.OpReconfig:
		if err := s.applyReconfig(tree, t); err != nil {
			return err
		}
	case jute.OpCloseSession:
		if err := s.applyClose(tree, t); err != nil {
			return err
		}
	case jute.OpMulti:
		if !failedMulti(t.Multi) {
			return s.applyOps(tree, t, t.Multi)
		}
		s.notify(appliedOf(h, failedMultiResult(t.Multi), 0))
	default:
		return s.applyOps(tree, t, []zkimport.TxnOp{t.Op})
	}
	return s.checkDigest(t)
}

// appliedOf describes the transaction of header h with its result.
func appliedOf(h zkimport.TxnHeader, r *datatree.Result, timeout int32) Applied {
	return Applied{SessionID: h.ClientID, Cxid: h.Cxid, Zxid: h.Zxid, Time: h.Time, Type: h.Type, Result: r, Timeout: timeout}
}

// notify makes the transaction's zxid the State's last, then hands the
// transaction to the Applied callback. The order matters: the server
// answers the request from the callback, and the session's next reply
// carries LastZxid, which must not be older than that answer's zxid.
func (s *State) notify(a Applied) {
	s.mu.Lock()
	s.lastZxid = a.Zxid
	s.mu.Unlock()
	if s.opts.Applied != nil {
		s.opts.Applied(a)
	}
}

// hook returns the Apply hook that reports the result under the tree lock.
func (s *State) hook(h zkimport.TxnHeader) func(*datatree.Txn, *datatree.Result) {
	return func(_ *datatree.Txn, r *datatree.Result) { s.notify(appliedOf(h, r, 0)) }
}

// checkDigest compares the tree's ZooKeeper digest with the one the
// leader logged, when it logged one this file can compute.
func (s *State) checkDigest(t *zkimport.Txn) error {
	if t.Digest == nil || t.Digest.Version != zkDigestVersion {
		return nil
	}
	if got := s.dig.value.Load(); t.Digest.Tree != got {
		return fmt.Errorf("tree digest %#x, ZooKeeper's is %#x", uint64(got), uint64(t.Digest.Tree))
	}
	return nil
}

// applyOps applies a data-tree transaction (ops holds the one op, or a
// successful multi's elements) and checks the outcome.
func (s *State) applyOps(tree *datatree.Tree, t *zkimport.Txn, ops []zkimport.TxnOp) error {
	h := t.Header
	reqs := make([]jute.MultiOp, len(ops))
	for i, op := range ops {
		req, err := request(op)
		if err != nil {
			return err
		}
		reqs[i] = jute.MultiOp{Type: op.Type, Request: req}
	}
	txn := &datatree.Txn{Type: h.Type, SessionID: h.ClientID, Time: h.Time, IDs: s.auth.token}
	if h.Type == jute.OpMulti {
		txn.Request = &jute.MultiRequest{Ops: reqs}
	} else {
		txn.Request = reqs[0].Request
	}
	paths := touched(ops)
	before := s.dig.sum(tree, paths)
	res := tree.Apply(txn, h.Zxid, s.hook(h))
	s.dig.update(tree, paths, before, createdOwners(ops, h.ClientID))
	if err := checkResult(h.Type, ops, res); err != nil {
		return err
	}
	if err := checkOutcome(tree, h, ops, s.auth.token); err != nil {
		return err
	}
	return s.checkDigest(t)
}

// request returns the tree request that makes op's change: the exact path
// and kind of a create, the version before a setData or setACL.
func request(op zkimport.TxnOp) (jute.Record, error) {
	switch op.Type {
	case jute.OpCreate, jute.OpCreate2:
		mode := jute.ModePersistent
		if op.Ephemeral {
			mode = jute.ModeEphemeral
		}
		return &jute.CreateRequest{Path: op.Path, Data: op.Data, ACL: op.ACL, Flags: mode}, nil
	case jute.OpCreateContainer:
		return &jute.CreateRequest{Path: op.Path, Data: op.Data, ACL: op.ACL, Flags: jute.ModeContainer}, nil
	case jute.OpCreateTTL:
		return &jute.CreateTTLRequest{Path: op.Path, Data: op.Data, ACL: op.ACL,
			Flags: jute.ModePersistentWithTTL, TTL: op.TTL}, nil
	case jute.OpDelete:
		return &jute.DeleteRequest{Path: op.Path, Version: -1}, nil
	case jute.OpDeleteContainer:
		return &jute.PathRequest{Path: op.Path}, nil
	case jute.OpSetData:
		return &jute.SetDataRequest{Path: op.Path, Data: op.Data, Version: op.Version - 1}, nil
	case jute.OpSetACL:
		return &jute.SetACLRequest{Path: op.Path, ACL: op.ACL, Version: op.Version - 1}, nil
	case jute.OpCheck:
		return &jute.CheckVersionRequest{Path: op.Path, Version: op.Version - 1}, nil
	}
	return nil, fmt.Errorf("%w: %s", errUnsupported, op.Type)
}

// isCreate reports whether typ is a create of any kind.
func isCreate(typ jute.OpCode) bool {
	switch typ {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		return true
	}
	return false
}

// touched lists, once each, the nodes ops change: a create's or delete's
// node and its parent, a setData's or setACL's node.
func touched(ops []zkimport.TxnOp) []string {
	var set pathSet
	for _, op := range ops {
		switch op.Type {
		case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL,
			jute.OpDelete, jute.OpDeleteContainer:
			set.add(op.Path)
			set.add(parentOf(op.Path))
		case jute.OpSetData, jute.OpSetACL:
			set.add(op.Path)
		}
	}
	return set.list
}

// pathSet lists paths in the order first added, each once.
type pathSet struct {
	list []string
	seen map[string]bool
}

func (s *pathSet) add(p string) {
	if s.seen == nil {
		s.seen = make(map[string]bool)
	}
	if !s.seen[p] {
		s.seen[p] = true
		s.list = append(s.list, p)
	}
}

// createdOwners maps the path of each create in ops to the stored
// ephemeralOwner ZooKeeper gives the new node.
func createdOwners(ops []zkimport.TxnOp, session int64) map[string]int64 {
	m := make(map[string]int64)
	for _, op := range ops {
		if isCreate(op.Type) {
			m[op.Path] = zkimport.OwnerOf(op, session)
		}
	}
	return m
}

// parentOf returns the parent path of p ("/" for a top-level node).
func parentOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

// checkResult checks the tree's answer: success, and for every create the
// path ZooKeeper created.
func checkResult(typ jute.OpCode, ops []zkimport.TxnOp, res *datatree.Result) error {
	if res.Err != jute.OK {
		return fmt.Errorf("%s %s: the tree answers %s", ops[0].Type, ops[0].Path, res.Err)
	}
	if typ != jute.OpMulti {
		return checkCreated(ops[0], res.Response)
	}
	mr, ok := res.Response.(*jute.MultiResponse)
	if !ok || len(mr.Results) != len(ops) {
		return fmt.Errorf("multi of %d: the tree answers %T", len(ops), res.Response)
	}
	for i, r := range mr.Results {
		if r.Type == jute.OpError && r.Err != jute.OK {
			return fmt.Errorf("multi element %d (%s %s): the tree answers %s", i, ops[i].Type, ops[i].Path, r.Err)
		}
	}
	for i, r := range mr.Results {
		if err := checkCreated(ops[i], r.Response); err != nil {
			return fmt.Errorf("multi element %d: %w", i, err)
		}
	}
	return nil
}

// checkCreated checks that a create's response names the txn's path.
func checkCreated(op zkimport.TxnOp, resp jute.Record) error {
	if !isCreate(op.Type) {
		return nil
	}
	var got string
	switch r := resp.(type) {
	case *jute.CreateResponse:
		got = r.Path
	case *jute.Create2Response:
		got = r.Path
	default:
		return fmt.Errorf("%s %s: the tree answers %T", op.Type, op.Path, resp)
	}
	if got != op.Path {
		return fmt.Errorf("%s: the tree created %s, ZooKeeper %s", op.Type, got, op.Path)
	}
	return nil
}

// checkOutcome reads back what the creates of ops made: each new node
// (unless the same transaction deleted it again) has the zxid as czxid and
// the ephemeralOwner ZooKeeper gave it, and each parent's stored cversion
// is the parentCVersion of the last create under it.
func checkOutcome(tree *datatree.Tree, h zkimport.TxnHeader, ops []zkimport.TxnOp, ids []jute.ID) error {
	cversions := make(map[string]int32)
	for i, op := range ops {
		if !isCreate(op.Type) {
			continue
		}
		if op.ParentCVersion != -1 {
			cversions[parentOf(op.Path)] = op.ParentCVersion
		}
		if deletedLater(ops[i+1:], op.Path) {
			continue
		}
		st, code := tree.Exists(op.Path, nil)
		if code != jute.OK {
			return fmt.Errorf("%s %s: the node is not there (%s)", op.Type, op.Path, code)
		}
		owner := zkimport.OwnerOf(op, h.ClientID)
		if !datatree.IsEphemeralOwner(owner) {
			owner = 0 // containers and TTL nodes show 0 to clients
		}
		if st.Czxid != h.Zxid || st.EphemeralOwner != owner {
			return fmt.Errorf("%s %s: czxid %s ephemeralOwner %#x, ZooKeeper's %s and %#x", op.Type, op.Path,
				zxidString(st.Czxid), st.EphemeralOwner, zxidString(h.Zxid), owner)
		}
	}
	for parent, want := range cversions {
		_, st, code := tree.GetData(parent, ids, nil)
		if code != jute.OK {
			continue // deleted later in the same multi
		}
		if got := (st.Cversion + st.NumChildren) / 2; got != want {
			return fmt.Errorf("parent %s: cversion %d, ZooKeeper's %d", parent, got, want)
		}
	}
	return nil
}

// deletedLater reports whether ops delete path.
func deletedLater(ops []zkimport.TxnOp, path string) bool {
	for _, op := range ops {
		if (op.Type == jute.OpDelete || op.Type == jute.OpDeleteContainer) && op.Path == path {
			return true
		}
	}
	return false
}

// failedMulti reports whether a multi failed: ZooKeeper logs an ErrorTxn
// for the element that failed and for every element after it.
func failedMulti(ops []zkimport.TxnOp) bool {
	return slices.ContainsFunc(ops, func(op zkimport.TxnOp) bool { return op.Type == jute.OpError })
}

// failedMultiResult is ZooKeeper's answer to a failed multi (DataTree's
// processTxn): header err OK, every element an error result, with code OK
// before the first ErrorTxn, each ErrorTxn's own code, and
// RuntimeInconsistency for any other element after one.
func failedMultiResult(ops []zkimport.TxnOp) *datatree.Result {
	results := make([]jute.MultiResult, len(ops))
	failed := false
	for i, op := range ops {
		code := jute.OK
		switch {
		case op.Type == jute.OpError:
			code, failed = op.Err, true
		case failed:
			code = jute.RuntimeInconsistency
		}
		results[i] = jute.MultiResult{Type: jute.OpError, Err: code}
	}
	return &datatree.Result{Response: &jute.MultiResponse{Results: results}}
}

// applyReconfig stores the configuration a reconfig decided, as ZooKeeper
// does (its SetDataTxn has version -1).
func (s *State) applyReconfig(tree *datatree.Tree, t *zkimport.Txn) error {
	op := t.Op
	if op.Path != configPath || op.Version != -1 {
		return fmt.Errorf("reconfig of %s to version %d: ZooKeeper writes only %s, to version -1", op.Path, op.Version, configPath)
	}
	tree.SetConfigNode(op.Data, t.Header.Zxid, t.Header.Time)
	st, code := tree.Exists(configPath, nil)
	if code != jute.OK {
		return fmt.Errorf("reconfig: %s is missing", configPath)
	}
	s.notify(appliedOf(t.Header, &datatree.Result{
		Response: &jute.GetDataResponse{Data: op.Data, Stat: st},
		Events:   []datatree.Event{{Type: jute.EventNodeDataChanged, Path: configPath}},
	}, 0))
	return nil
}

// applyClose ends a session: its ephemerals (which must be the ones a
// 3.6+ CloseSessionTxn lists) are deleted and it leaves the table.
func (s *State) applyClose(tree *datatree.Tree, t *zkimport.Txn) error {
	h := t.Header
	eph := tree.SessionEphemerals(h.ClientID)
	if t.Op.Paths != nil {
		want := slices.Clone(t.Op.Paths)
		slices.Sort(want)
		if !slices.Equal(want, eph) {
			return fmt.Errorf("ZooKeeper deletes %q, the session's ephemerals here are %q", want, eph)
		}
	}
	var set pathSet
	for _, p := range eph {
		set.add(p)
		set.add(parentOf(p))
	}
	paths := set.list
	before := s.dig.sum(tree, paths)
	txn := &datatree.Txn{Type: jute.OpCloseSession, SessionID: h.ClientID, Time: h.Time, IDs: s.auth.token}
	res := tree.Apply(txn, h.Zxid, s.hook(h))
	s.dig.update(tree, paths, before, nil)
	s.Sessions().Remove(h.ClientID)
	if res.Err != jute.OK {
		return fmt.Errorf("the tree answers %s", res.Err)
	}
	if left := tree.SessionEphemerals(h.ClientID); len(left) > 0 {
		return fmt.Errorf("ephemerals left: %q", left)
	}
	return nil
}
