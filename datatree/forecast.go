package datatree

import "github.com/zkserverd/zkserverd/jute"

// Forecast returns the error code Apply would give txn if it were applied
// to the tree as it is now, or OK when it would succeed or is not a write
// Forecast knows: a create of any kind or a setData, whose payload is what
// a failed write would otherwise cost the log. It runs the same checks as
// Apply, in the same order, and changes nothing. The answer holds at apply
// time only if no write applied in between touches the path or its parent;
// the caller (the leader, which orders every write) makes sure of that.
func (t *Tree) Forecast(txn *Txn) jute.Code {
	if !requestMatches(txn.Type, txn.Request) {
		return jute.OK
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	ctx := &applyCtx{txn: txn}
	var code jute.Code
	switch txn.Type {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		a := createArgsOf(txn.Request)
		_, _, code = t.createCheck(ctx, txn.Type, &a)
	case jute.OpSetData:
		_, code = t.setDataCheck(ctx, txn.Request.(*jute.SetDataRequest))
	}
	if code == jute.QuotaExceeded {
		// Quota usage is summed over a whole subtree, which writes to
		// other paths change: not a certain answer.
		return jute.OK
	}
	return code
}
