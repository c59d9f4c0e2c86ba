package server

import (
	"log/slog"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// auditWrite records one write for the audit log (audit.enable): who (the
// session, the client address and every authenticated id), what (the
// operation and path) and the outcome, as ZooKeeper 3.6+'s audit logger
// does. It runs on the member whose client made the request.
func (c *conn) auditWrite(p *pending, zxid int64, code jute.Code) {
	if !c.s.cfg.AuditEnable {
		return
	}
	result := "success"
	if code != jute.OK {
		result = "failure"
	}
	c.s.audit.Info("audit",
		"session", hexID(c.sessionID.Load()),
		"ip", c.ip,
		"user", auditUsers(p.ids),
		"operation", auditOperation(p.op),
		"znode", auditPath(p.req),
		"zxid", hexID(zxid),
		"result", result,
		"code", code.String(),
	)
}

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
