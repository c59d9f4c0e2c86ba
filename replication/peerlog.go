package replication

// Quiet logs about an unreachable member. While a member is down, raft's
// leader complains about it on every heartbeat and every append it retries
// ("failed to heartbeat to", "failed to appendEntries to", "failed to
// contact"): about 97 ERROR lines in 30 s with one member of three down.
// peerLog turns that into one line when the member stops answering, a
// reminder every remindEvery with the count of lines left out, and one
// line when it answers again (bytes read from it: a dial alone may reach
// a proxy in front of a dead member).

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// remindEvery is how often a member that stays down is logged again.
const remindEvery = 5 * time.Minute

// peerLog is the state of the members raft has complained about; one per
// Node, shared by every logger raft derives from its own and by the
// transport's connections. mu guards down and idByAddr.
type peerLog struct {
	log         *slog.Logger // where the "answers again" lines go
	now         func() time.Time
	remindEvery time.Duration
	// resolve maps a raft address to a member id from this member's own
	// configuration (nil: only addresses learned from raft's lines).
	resolve func(addr string) (string, bool)

	mu       sync.Mutex
	down     map[string]*peerDown // by member id, or address when unknown
	idByAddr map[string]string    // learned from the raft.Server values raft logs
	// anyDown is len(down), read without mu on every read from a member.
	anyDown atomic.Int32
}

// peerDown is one member that stopped answering.
type peerDown struct {
	since      time.Time // the first failure
	lastLine   time.Time // the last line logged about it
	suppressed int       // lines left out since lastLine
	total      int       // lines left out since since
}

// newPeerLog returns an empty peerLog that logs to l.
func newPeerLog(l *slog.Logger, now func() time.Time, resolve func(string) (string, bool)) *peerLog {
	return &peerLog{log: l, now: now, remindEvery: remindEvery, resolve: resolve,
		down: make(map[string]*peerDown), idByAddr: make(map[string]string)}
}

// peerFailure says whether a raft line at level is a complaint about one
// member not answering, and which member: a warning or error that names a
// peer (keys peer, target, server-id) and carries an error, or raft's
// leader-lease "failed to contact".
func (p *peerLog) peerFailure(level slog.Level, msg string, args []any) (string, bool) {
	if level < slog.LevelWarn {
		return "", false
	}
	peer, hasErr := "", false
	for i := 0; i+1 < len(args); i += 2 {
		k, _ := args[i].(string)
		switch k {
		case "peer", "target", "server-id":
			peer = p.member(args[i+1])
		case "error", "err":
			hasErr = true
		}
	}
	if peer == "" || !(hasErr || strings.HasPrefix(msg, "failed to contact")) {
		return "", false
	}
	return peer, true
}

// member names the member a logged value stands for: its id when known.
func (p *peerLog) member(v any) string {
	switch v := v.(type) {
	case raft.Server:
		p.mu.Lock()
		p.idByAddr[string(v.Address)] = string(v.ID)
		p.mu.Unlock()
		return string(v.ID)
	case raft.ServerID:
		return string(v)
	case raft.ServerAddress:
		return p.idOf(string(v))
	case string:
		return p.idOf(v)
	}
	return p.idOf(fmt.Sprint(v))
}

// idOf maps an address to a member id: from the configuration, else from
// what raft logged; the address itself when neither knows it.
func (p *peerLog) idOf(addr string) string {
	if p.resolve != nil {
		if id, ok := p.resolve(addr); ok {
			return id
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.idByAddr[addr]; ok {
		return id
	}
	return addr
}

// failed records one complaint about member and says whether to log it,
// and with which attributes: the first one (the member went down), and one
// every remindEvery after that with the count left out since the last.
func (p *peerLog) failed(member string) (bool, []any) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.down[member]
	if !ok {
		p.down[member] = &peerDown{since: now, lastLine: now}
		p.anyDown.Store(int32(len(p.down)))
		return true, []any{"member", member, "repeats", "not logged again until the member answers"}
	}
	if now.Sub(d.lastLine) < p.remindEvery {
		d.suppressed++
		d.total++
		return false, nil
	}
	attrs := []any{"member", member, "down_for", now.Sub(d.since).Round(time.Second).String(), "suppressed", d.suppressed}
	d.lastLine, d.suppressed = now, 0
	return true, attrs
}

// answered records that the member at addr answered: if it was down, one
// line says so, with how long and how many lines were left out.
func (p *peerLog) answered(addr string) {
	member := p.idOf(addr)
	now := p.now()
	p.mu.Lock()
	d, ok := p.down[member]
	delete(p.down, member)
	p.anyDown.Store(int32(len(p.down)))
	p.mu.Unlock()
	if !ok {
		return
	}
	p.log.Info("member reachable again", "member", member, "addr", addr,
		"down_for", now.Sub(d.since).Round(time.Millisecond).String(), "suppressed", d.total)
}

// isDown reports whether member is currently taken as down (tests).
func (p *peerLog) isDown(member string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.down[member]
	return ok
}

// answerConn is a connection to a member that tells peerLog when the
// member answers on it (bytes read) while some member is taken as down:
// while none is, a read costs one atomic load more.
type answerConn struct {
	net.Conn
	addr string
	pl   *peerLog
}

// Read implements net.Conn.
func (c *answerConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.pl.anyDown.Load() > 0 {
		c.pl.answered(c.addr)
	}
	return n, err
}

// logLine is the adapter's hook: it logs a raft line unless peerLog
// leaves it out, adding peerLog's attributes.
func (p *peerLog) logLine(l *slog.Logger, level slog.Level, msg string, args []any) {
	if member, ok := p.peerFailure(level, msg, args); ok {
		log, extra := p.failed(member)
		if !log {
			return
		}
		args = append(args, extra...)
	}
	l.Log(context.Background(), level, msg, args...)
}
