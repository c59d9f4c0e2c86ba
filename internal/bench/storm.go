package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// The reconnect storm: many idle sessions, spread evenly over an
// ensemble's members, each kept alive by pings on one goroutine with a few
// hundred bytes of buffer (a client library per session would cost the
// load generator more than the servers). Then one member is killed and
// every session it held reconnects, with its session id and password, to
// the next member in its list, after a random delay as ZooKeeper's Java
// client waits before a reconnect. The storm is over when every session is
// connected again; a session the ensemble expired meanwhile is counted.

// ErrSessionExpired is returned for a reconnect the server refused
// because the session had expired (a zero timeout in the reply).
var ErrSessionExpired = errors.New("bench: session expired")

// StormConfig configures RunStorm.
type StormConfig struct {
	// Addrs are the members' client addresses; session i first connects to
	// Addrs[i%len(Addrs)].
	Addrs []string
	// Sources are local addresses to connect from (session i uses
	// Sources[i%len(Sources)]); several loopback addresses lift the limit
	// of ~28k connections from one address to one server port. Empty: any.
	Sources []string
	// Sessions is the number of sessions; Dialers how many are being
	// opened at once (default 256).
	Sessions int
	Dialers  int
	// SessionTimeout is requested in every handshake (default 30s).
	SessionTimeout time.Duration
	// Hold is how long every session stays idle before the kill (default
	// 5s), and After how long they are watched once all are back, to catch
	// expirations the servers decide later (default: the session timeout).
	Hold  time.Duration
	After time.Duration
	// KillPID is the process killed (SIGKILL) after Hold; 0 kills nothing
	// and measures only the connect phase and the idle hold. Kill, if
	// set, is called instead (tests break connections with it).
	KillPID int
	Kill    func() error
	// KillAt, if set, replaces Hold: the kill happens at that wall-clock
	// time, so that several storm processes (each holding what one
	// process's open-file limit allows) share one kill. A process with
	// KillAt and no KillPID kills nothing and counts its lost sessions
	// from KillAt.
	KillAt time.Time
	// Jitter bounds the random delay before a reconnect (default 1s, as
	// ZooKeeper's Java client; negative: none).
	Jitter time.Duration
	// Timeout bounds the wait for every session to come back (default 2m).
	Timeout time.Duration
}

// withDefaults fills in what was left zero.
func (c StormConfig) withDefaults() StormConfig {
	if c.Dialers <= 0 {
		c.Dialers = 256
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 30 * time.Second
	}
	if c.Hold <= 0 {
		c.Hold = 5 * time.Second
	}
	if c.After <= 0 {
		c.After = c.SessionTimeout
	}
	if c.Jitter == 0 {
		c.Jitter = time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Minute
	}
	return c
}

// StormResult is what RunStorm saw. Durations are milliseconds.
type StormResult struct {
	Sessions      int            `json:"sessions"`
	Opened        int            `json:"opened"`
	OpenFailed    int            `json:"open_failed"`
	OpenRetries   int            `json:"open_retries"`
	OpenMS        float64        `json:"open_ms"`
	Killed        bool           `json:"killed"`
	Lost          int            `json:"lost"`          // sessions whose connection broke after the kill
	Back          int            `json:"back"`          // of those, reconnected
	Expired       int            `json:"expired"`       // reconnects refused as expired, at any time
	NotBack       int            `json:"not_back"`      // lost and not back within Timeout
	DroppedBefore int            `json:"dropped_early"` // connections that broke before the kill
	AllBackMS     float64        `json:"all_back_ms"`   // from the kill to the last reconnect
	Reconnect     LatencySummary `json:"reconnect_us"`
	Attempts      int64          `json:"reconnect_attempts"`
	LoadAvg       string         `json:"loadavg,omitempty"`
}

// stormSession is one idle session; only its goroutine touches it.
type stormSession struct {
	id      int
	addr    int
	session int64
	passwd  []byte
	zxid    int64
}

// storm is the shared state of one RunStorm.
type storm struct {
	cfg      StormConfig
	killedAt atomic.Int64 // unix nanos, 0 before the kill
	killed   chan struct{}
	stop     chan struct{}

	mu       sync.Mutex
	res      StormResult
	backH    *Histogram // time from the kill to each reconnect
	lastBack time.Time
	pending  int // lost and not yet back
}

// RunStorm opens the sessions, holds them, kills KillPID, waits for every
// lost session to come back and watches them After longer.
func RunStorm(ctx context.Context, cfg StormConfig) (*StormResult, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Addrs) < 1 || cfg.Sessions < 1 {
		return nil, errors.New("bench: storm needs addresses and at least one session")
	}
	s := &storm{cfg: cfg, killed: make(chan struct{}), stop: make(chan struct{}),
		backH: NewHistogram()}
	s.res.Sessions = cfg.Sessions
	var wg sync.WaitGroup
	defer func() { close(s.stop); wg.Wait() }()
	if err := s.openAll(ctx, &wg); err != nil {
		return nil, err
	}
	killAt := cfg.KillAt
	if killAt.IsZero() {
		killAt = time.Now().Add(cfg.Hold)
	}
	if err := sleepUntil(ctx, killAt); err != nil {
		return nil, err
	}
	if cfg.KillPID == 0 && cfg.Kill == nil && cfg.KillAt.IsZero() {
		return s.result(), nil
	}
	if err := s.kill(); err != nil {
		return nil, err
	}
	s.waitBack(ctx)
	if err := sleepUntil(ctx, time.Now().Add(cfg.After)); err != nil {
		return nil, err
	}
	return s.result(), nil
}

// openAll starts every session's goroutine, Dialers handshakes at a time,
// and returns once each has connected or failed.
func (s *storm) openAll(ctx context.Context, wg *sync.WaitGroup) error {
	start := time.Now()
	slots := make(chan struct{}, s.cfg.Dialers)
	var opened sync.WaitGroup
	for i := range s.cfg.Sessions {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		opened.Add(1)
		wg.Go(func() {
			ss := &stormSession{id: i, addr: i % len(s.cfg.Addrs)}
			nc, retries, err := s.open(ctx, ss)
			<-slots
			s.mu.Lock()
			s.res.OpenRetries += retries
			if err != nil {
				s.res.OpenFailed++
			} else {
				s.res.Opened++
			}
			s.mu.Unlock()
			opened.Done()
			if err == nil {
				s.keep(ctx, ss, nc)
			}
		})
	}
	opened.Wait()
	s.res.OpenMS = ms(time.Since(start))
	return nil
}

// openAttempts bounds the attempts to open one session; each after the
// first goes to the next member, 100ms later, as a client would retry.
const openAttempts = 5

// open opens ss's session, retrying on the next members, and returns the
// number of retries.
func (s *storm) open(ctx context.Context, ss *stormSession) (net.Conn, int, error) {
	var err error
	for attempt := range openAttempts {
		if attempt > 0 {
			if err := sleepUntil(ctx, time.Now().Add(100*time.Millisecond)); err != nil {
				return nil, attempt, err
			}
			ss.addr = (ss.addr + 1) % len(s.cfg.Addrs)
		}
		var nc net.Conn
		if nc, err = s.connect(ctx, ss); err == nil {
			return nc, attempt, nil
		}
	}
	return nil, openAttempts - 1, err
}

// kill sends SIGKILL to the member and starts the clock.
func (s *storm) kill() error {
	kill := s.cfg.Kill
	if kill == nil && s.cfg.KillPID == 0 {
		kill = func() error { return nil } // another process kills at KillAt
	}
	if kill == nil {
		kill = func() error {
			p, err := os.FindProcess(s.cfg.KillPID)
			if err != nil {
				return err
			}
			return p.Signal(syscall.SIGKILL)
		}
	}
	s.killedAt.Store(time.Now().UnixNano())
	if err := kill(); err != nil {
		return fmt.Errorf("bench: kill %d: %w", s.cfg.KillPID, err)
	}
	s.mu.Lock()
	s.res.Killed = true
	s.mu.Unlock()
	close(s.killed)
	return nil
}

// waitBack waits until every lost session is back or Timeout passes.
// Sessions are lost as their connections break, within milliseconds of
// the kill; a quiet second with none pending ends the wait early.
func (s *storm) waitBack(ctx context.Context) {
	deadline := time.After(s.cfg.Timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	quiet := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		none := s.pending == 0 && s.res.Lost > 0
		s.mu.Unlock()
		if none {
			quiet++
		} else {
			quiet = 0
		}
		if quiet >= 20 {
			return
		}
	}
}

// result returns a copy of the tally.
func (s *storm) result() *StormResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res
	r.NotBack = s.pending
	r.Reconnect = s.backH.Summarize()
	if at := s.killedAt.Load(); at != 0 && !s.lastBack.IsZero() {
		r.AllBackMS = ms(s.lastBack.Sub(time.Unix(0, at)))
	}
	return &r
}

// connect opens (or, with a session id, resumes) ss's session on its
// current member.
func (s *storm) connect(ctx context.Context, ss *stormSession) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	if n := len(s.cfg.Sources); n > 0 {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(s.cfg.Sources[ss.id%n])}
	}
	nc, err := d.DialContext(ctx, "tcp", s.cfg.Addrs[ss.addr])
	if err != nil {
		return nil, err
	}
	if err := stormHandshake(nc, ss, s.cfg.SessionTimeout); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// stormHandshake sends ss's ConnectRequest and reads the response into ss.
func stormHandshake(nc net.Conn, ss *stormSession, timeout time.Duration) error {
	if err := nc.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	passwd := ss.passwd
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	req := jute.ConnectRequest{TimeOut: int32(timeout / time.Millisecond), SessionID: ss.session,
		LastZxidSeen: ss.zxid, Passwd: passwd, HasReadOnly: true}
	if _, err := nc.Write(jute.AppendFrame(nil, &req)); err != nil {
		return err
	}
	payload, err := readFrame(nc)
	if err != nil {
		return err
	}
	var resp jute.ConnectResponse
	if err := jute.Decode(payload, &resp); err != nil {
		return err
	}
	if resp.TimeOut <= 0 || resp.SessionID == 0 {
		return ErrSessionExpired
	}
	ss.session, ss.passwd = resp.SessionID, resp.Passwd
	return nc.SetDeadline(time.Time{})
}

// readFrame reads one length-prefixed frame.
func readFrame(nc net.Conn) ([]byte, error) {
	var l [4]byte
	if _, err := readFull(nc, l[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > 1<<20 {
		return nil, fmt.Errorf("bench: frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := readFull(nc, b)
	return b, err
}

func readFull(nc net.Conn, b []byte) (int, error) {
	got := 0
	for got < len(b) {
		n, err := nc.Read(b[got:])
		got += n
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// keep pings ss's session until the run stops, and reconnects it when its
// connection breaks.
func (s *storm) keep(ctx context.Context, ss *stormSession, nc net.Conn) {
	for {
		err := s.idle(ss, nc)
		nc.Close()
		if err == nil {
			return // the run stopped
		}
		after := s.killedAt.Load() != 0
		s.mu.Lock()
		if after {
			s.res.Lost++
			s.pending++
		} else {
			s.res.DroppedBefore++
		}
		s.mu.Unlock()
		if nc = s.resume(ctx, ss, after); nc == nil {
			return
		}
	}
}

// idle reads and discards what the server sends and pings a third of the
// session timeout after the last ping (a ping's reply is not awaited: a
// member that stops answering is found by its connection breaking). It returns nil when the run stops
// and the error that broke the connection otherwise.
func (s *storm) idle(ss *stormSession, nc net.Conn) error {
	every := s.cfg.SessionTimeout / 3
	ping := jute.AppendFrame(nil, &jute.RequestHeader{Xid: jute.XidPing, Type: jute.OpPing})
	var buf [256]byte
	// Stagger the first ping so that sessions do not ping in waves. The
	// run's stop is noticed at the next ping, not sooner: a waker
	// goroutine per session would double the generator's goroutines.
	next := time.Now().Add(time.Duration(rand.Int64N(int64(every))))
	for {
		select {
		case <-s.stop:
			return nil
		default:
		}
		if err := nc.SetReadDeadline(next); err != nil {
			return err
		}
		_, err := nc.Read(buf[:])
		var ne net.Error
		switch {
		case err == nil:
			// Ping replies and notifications: an idle session needs none.
		case errors.As(err, &ne) && ne.Timeout():
			select {
			case <-s.stop:
				return nil
			default:
			}
			if _, err := nc.Write(ping); err != nil {
				return err
			}
			next = time.Now().Add(every)
		default:
			return err
		}
	}
}

// resume reconnects ss's session to the next members in turn until one
// accepts it, the session is expired, or the run stops (then nil). A
// counted session is one lost after the kill.
func (s *storm) resume(ctx context.Context, ss *stormSession, counted bool) net.Conn {
	for attempt := 0; ; attempt++ {
		if s.cfg.Jitter > 0 {
			select {
			case <-time.After(time.Duration(rand.Int64N(int64(s.cfg.Jitter)))):
			case <-s.stop:
				return nil
			}
		}
		select {
		case <-s.stop:
			return nil
		default:
		}
		ss.addr = (ss.addr + 1) % len(s.cfg.Addrs)
		nc, err := s.connect(ctx, ss)
		s.mu.Lock()
		s.res.Attempts++
		switch {
		case errors.Is(err, ErrSessionExpired):
			s.res.Expired++
			if counted {
				s.pending--
			}
			s.mu.Unlock()
			return nil
		case err == nil:
			if counted {
				s.pending--
				s.res.Back++
				now := time.Now()
				s.backH.RecordDuration(now.Sub(time.Unix(0, s.killedAt.Load())))
				if now.After(s.lastBack) {
					s.lastBack = now
				}
			}
			s.mu.Unlock()
			return nc
		}
		s.mu.Unlock()
	}
}
