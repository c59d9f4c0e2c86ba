package peernet

import (
	"sync"
	"time"
)

// refusalLogInterval is how often the same refusal is logged at warn:
// raft redials a refused member many times a second.
const refusalLogInterval = 10 * time.Second

// logLimiter lets one log line per key through per interval. mu guards
// last.
type logLimiter struct {
	interval time.Duration

	mu   sync.Mutex
	last map[string]time.Time
}

func newLogLimiter(interval time.Duration) *logLimiter {
	return &logLimiter{interval: interval, last: make(map[string]time.Time)}
}

// allow reports whether a line for key may be logged now. Keys older than
// the interval are dropped, so the map stays small.
func (l *logLimiter) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if t, ok := l.last[key]; ok && now.Sub(t) < l.interval {
		return false
	}
	for k, t := range l.last {
		if now.Sub(t) >= l.interval {
			delete(l.last, k)
		}
	}
	l.last[key] = now
	return true
}
