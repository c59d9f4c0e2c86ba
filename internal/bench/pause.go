package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// The write pause of a rolling restart: one client writes at a steady
// rate while the members restart one after another, and each restart's
// longest gap between two acknowledged writes is its pause. The writer
// stands for a client without back-off: a write that fails or does not
// answer within WriteTimeout is retried at once, and a broken connection
// is replaced at once by a new session on the next member, so the pause
// measures the ensemble, not a client library's retry policy.

// PauseConfig configures a pause writer.
type PauseConfig struct {
	// Addrs are the members' client addresses; the writer moves to the
	// next one when its connection fails.
	Addrs []string
	// Interval is the time between the starts of two writes (the rate is
	// 1/Interval while writes are faster than that).
	Interval time.Duration
	// WriteTimeout bounds one write; then the connection is dropped.
	WriteTimeout time.Duration
	// Path is the znode the writer sets (created when missing).
	Path string
	// DataSize is the size of each write.
	DataSize int
}

// withDefaults fills in what was left zero.
func (c PauseConfig) withDefaults() PauseConfig {
	if c.Interval <= 0 {
		c.Interval = 10 * time.Millisecond
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 2 * time.Second
	}
	if c.Path == "" {
		c.Path = "/zkbench-pause"
	}
	if c.DataSize <= 0 {
		c.DataSize = 100
	}
	return c
}

// PauseLog is what a pause writer saw: the moment each write was
// acknowledged, in order, and the failures.
type PauseLog struct {
	Start      time.Time
	End        time.Time
	Acked      []time.Time
	Failed     int // writes that failed or timed out
	Reconnects int // sessions opened after the first
}

// RunPauseWriter writes until ctx ends and returns what it saw. It fails
// only when no write was ever acknowledged.
func RunPauseWriter(ctx context.Context, cfg PauseConfig) (*PauseLog, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("bench: pause: at least one server address is needed")
	}
	log := &PauseLog{Start: time.Now()}
	payload := make([]byte, cfg.DataSize)
	opts := DialOptions{SessionTimeout: 4 * time.Second, DialTimeout: 500 * time.Millisecond}
	var conn *Conn
	next, sessions := 0, 0
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	for ctx.Err() == nil {
		if conn == nil {
			c, err := Dial(ctx, cfg.Addrs[next%len(cfg.Addrs)], opts)
			next++
			if err != nil {
				sleepUntil(ctx, time.Now().Add(5*time.Millisecond))
				continue
			}
			if sessions++; sessions > 1 {
				log.Reconnects++
			}
			conn = c
		}
		if err := pauseWrite(ctx, conn, cfg, payload); err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Failed++
			var code jute.Code
			if !errors.As(err, &code) {
				conn.Abort() // broken or silent: next member
				conn = nil
			}
			continue // retry at once
		}
		log.Acked = append(log.Acked, time.Now())
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	if conn != nil {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn.Close(closeCtx)
		cancel()
	}
	log.End = time.Now()
	if len(log.Acked) == 0 {
		return log, errors.New("bench: pause: no write was acknowledged")
	}
	return log, nil
}

// pauseWrite sets the writer's znode once, creating it when it is missing.
func pauseWrite(ctx context.Context, c *Conn, cfg PauseConfig, payload []byte) error {
	wctx, cancel := context.WithTimeout(ctx, cfg.WriteTimeout)
	defer cancel()
	_, err := c.Call(wctx, jute.OpSetData, &jute.SetDataRequest{Path: cfg.Path, Data: payload, Version: -1}, nil)
	if errors.Is(err, jute.NoNode) {
		op, req := createReq(cfg.Path, payload)
		_, err = c.Call(wctx, op, req, nil)
		if errors.Is(err, jute.NodeExists) {
			err = nil
		}
	}
	return err
}

// PauseMark is one restart: its label and the time from the stop of the
// member to the moment it served again, plus the settling time after.
type PauseMark struct {
	Label    string
	From, To time.Time
}

// ReadPauseMarks reads marks, one per line: label, then the start and
// the end as Unix nanoseconds, separated by spaces; blank lines and lines
// starting with # are skipped.
func ReadPauseMarks(r io.Reader) ([]PauseMark, error) {
	var marks []PauseMark
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 3 {
			return nil, fmt.Errorf("bench: marks line %d: want label start-ns end-ns, got %q", line, text)
		}
		from, err1 := strconv.ParseInt(f[1], 10, 64)
		to, err2 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil || to < from {
			return nil, fmt.Errorf("bench: marks line %d: bad times in %q: %v", line, text, err)
		}
		marks = append(marks, PauseMark{Label: f[0], From: time.Unix(0, from), To: time.Unix(0, to)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: read marks: %w", err)
	}
	return marks, nil
}

// LongestPause returns the longest gap between two consecutive
// acknowledged writes that ends in (from, to], and when it began; the
// time from the last acknowledgement to the end of the log counts as a
// gap too (a writer that never got through again). A gap belongs to the
// window it ends in: one that a restart causes starts with the last write
// before the stop, a moment before the window, and ends in it; one that
// starts at the end of a window and runs into the next belongs to the
// next restart.
func (l *PauseLog) LongestPause(from, to time.Time) (time.Duration, time.Time) {
	var longest time.Duration
	var at time.Time
	prev := l.Start
	consider := func(a, b time.Time) {
		if b.After(from) && !b.After(to) && b.Sub(a) > longest {
			longest, at = b.Sub(a), a
		}
	}
	for _, t := range l.Acked {
		consider(prev, t)
		prev = t
	}
	consider(prev, l.End)
	return longest, at
}

// WritePauseReport writes one line per mark (its longest pause, when it
// began relative to the mark's start, and the writes acknowledged in the
// mark's window) and a summary line.
func (l *PauseLog) WritePauseReport(w io.Writer, marks []PauseMark) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %12s %10s %8s\n", "restart", "pause_ms", "at_ms", "acked")
	var worst time.Duration
	for _, m := range marks {
		d, at := l.LongestPause(m.From, m.To)
		worst = max(worst, d)
		acked := 0
		for _, t := range l.Acked {
			if !t.Before(m.From) && !t.After(m.To) {
				acked++
			}
		}
		fmt.Fprintf(&b, "%-24s %12.1f %10.1f %8d\n", m.Label, ms(d), ms(at.Sub(m.From)), acked)
	}
	secs := l.End.Sub(l.Start).Seconds()
	fmt.Fprintf(&b, "writes acked %d (%.0f/s), failed %d, reconnects %d, longest pause of any restart %.1f ms\n",
		len(l.Acked), float64(len(l.Acked))/secs, l.Failed, l.Reconnects, ms(worst))
	_, err := io.WriteString(w, b.String())
	return err
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
