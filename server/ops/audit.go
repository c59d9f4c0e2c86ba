package ops

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/server"
)

// Audit logs one write (server.Operator; the server calls it only with
// audit.enable): who (the session, the client address and every
// authenticated id), what (the operation and path) and the outcome, as
// ZooKeeper 3.6+'s audit logger does.
func (o *Surfaces) Audit(r server.AuditRecord) {
	result := "success"
	if r.Code != jute.OK {
		result = "failure"
	}
	o.audit.Info("audit",
		"session", hexID(r.Session),
		"ip", r.IP,
		"user", auditUsers(r.IDs),
		"operation", auditOperation(r.Op),
		"znode", auditPath(r.Request),
		"zxid", hexID(r.Zxid),
		"result", result,
		"code", r.Code.String(),
	)
}

// hexID formats a session id or zxid as 0x<hex>.
func hexID(v int64) string { return fmt.Sprintf("0x%x", uint64(v)) }

// auditUsers lists the authenticated ids as scheme:id, comma-separated.
func auditUsers(ids []jute.ID) string {
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		parts = append(parts, id.Scheme+":"+id.ID)
	}
	return strings.Join(parts, ",")
}

// auditOperation names an operation as ZooKeeper's audit log does.
func auditOperation(op jute.OpCode) string {
	switch op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		return "create"
	case jute.OpDelete:
		return "delete"
	case jute.OpSetData:
		return "setData"
	case jute.OpSetACL:
		return "setAcl"
	case jute.OpMulti:
		return "multiOperation"
	case jute.OpReconfig:
		return "reconfig"
	case jute.OpCloseSession:
		return "closeSession"
	}
	return op.String()
}

// auditPath extracts the znode path of a write request (the first op's
// path for multi).
func auditPath(req jute.Record) string {
	switch r := req.(type) {
	case *jute.CreateRequest:
		return r.Path
	case *jute.CreateTTLRequest:
		return r.Path
	case *jute.DeleteRequest:
		return r.Path
	case *jute.SetDataRequest:
		return r.Path
	case *jute.SetACLRequest:
		return r.Path
	case *jute.CheckVersionRequest:
		return r.Path
	case *jute.MultiRequest:
		if len(r.Ops) > 0 {
			return auditPath(r.Ops[0].Request)
		}
	}
	return ""
}

// newAuditLogger returns the audit logger: the server's logger with the
// component set, so operators can route it.
func newAuditLogger(l *slog.Logger) *slog.Logger { return l.With("component", "audit") }
