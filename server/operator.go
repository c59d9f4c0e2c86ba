package server

import (
	"bytes"
	"io"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// Operator is the operator surfaces' side of the server: the four-letter
// words' replies, the AdminServer, /metrics and the audit log live in
// package server/ops, which implements it, so that the protocol engine
// does not depend on them. Options.Operator plugs it in; without one the
// server answers a four-letter word with nothing (the connection closes)
// and records no metrics or audit lines.
type Operator interface {
	// Start runs when the client port is open, before the first client is
	// accepted; an error stops the server's start.
	Start(s *Server) error
	// Stop runs first in Close, also when Start did not run or failed.
	Stop()
	// FourLetterWord writes the reply to cmd, a four-letter word the
	// client port recognised (detection is the server's); secure says it
	// came on secureClientPort (cons and stat list that port's
	// connections, as ZooKeeper lists the connections of the factory that
	// received the command); in is the rest of the connection's input
	// (stmk reads its mask from it).
	FourLetterWord(cmd string, secure bool, in io.Reader, out io.Writer)
	// ObserveRequest records one answered request and its latency.
	ObserveRequest(op jute.OpCode, d time.Duration)
	// ObserveLogSync records one fsync of the log.
	ObserveLogSync(d time.Duration)
	// Audit records one write of this member's client; it is called only
	// with audit.enable.
	Audit(r AuditRecord)
}

// AuditRecord is one write for the audit log: who (session, address,
// authenticated ids), what (operation and request) and the outcome.
type AuditRecord struct {
	Session int64
	IP      string
	IDs     []jute.ID
	Op      jute.OpCode
	Request jute.Record
	Zxid    int64
	Code    jute.Code
}

// noOperator is the Operator of a server given none.
type noOperator struct{}

func (noOperator) Start(*Server) error                               { return nil }
func (noOperator) Stop()                                             {}
func (noOperator) FourLetterWord(string, bool, io.Reader, io.Writer) {}
func (noOperator) ObserveRequest(jute.OpCode, time.Duration)         {}
func (noOperator) ObserveLogSync(time.Duration)                      {}
func (noOperator) Audit(AuditRecord)                                 {}

// runFourLetterWord queues a command's text reply; the connection is
// closed by the caller afterwards.
func (c *conn) runFourLetterWord(cmd string) {
	var b bytes.Buffer
	sc, secure := c.nc.(*secureConn)
	c.s.operator.FourLetterWord(cmd, secure && !sc.unified, c.br, &b)
	c.pl.out.push(b.Bytes())
}

// auditWrite hands one write of this connection to the audit log
// (audit.enable). It runs on the member whose client made the request.
func (c *conn) auditWrite(p *pending, zxid int64, code jute.Code) {
	if !c.s.cfg.AuditEnable {
		return
	}
	c.s.operator.Audit(AuditRecord{Session: c.sessionID.Load(), IP: c.ip, IDs: p.ids, Op: p.op,
		Request: p.req, Zxid: zxid, Code: code})
}

// observeRequest records one answered request with the operator (the
// latency summaries of /metrics).
func (s *Server) observeRequest(op jute.OpCode, d time.Duration) { s.operator.ObserveRequest(op, d) }

// observeLogSync records one fsync of the log (fsynctime, in mntr and
// /metrics). It runs on the log's syncing goroutines.
func (s *Server) observeLogSync(d time.Duration) {
	s.stats.fsyncTime.add(d)
	s.operator.ObserveLogSync(d)
}
