package bench

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"
)

// Garbage-collector pauses read from a server's log: a Go server run with
// GODEBUG=gctrace=1 prints one line per cycle whose "a+b+c ms clock" has
// its two stop-the-world phases as a and c; a JVM run with -Xlog:gc prints
// one line per pause ending in its duration ("... Pause Young ... 3.456ms").

var (
	goTrace   = regexp.MustCompile(`^gc \d+ @[0-9.]+s \d+%: ([0-9.]+)\+[0-9.]+\+([0-9.]+) ms clock.* ([0-9]+)->([0-9]+)->([0-9]+) MB`)
	javaPause = regexp.MustCompile(`\bPause\b.* ([0-9.]+)ms$`)
)

// GCPauses summarizes the pauses found in a log. Latencies are
// microseconds; HeapMaxMB is the largest heap a Go cycle started with.
type GCPauses struct {
	Cycles    int            `json:"cycles"`
	Pauses    LatencySummary `json:"pauses_us"`
	TotalMS   float64        `json:"total_ms"`
	HeapMaxMB float64        `json:"heap_max_mb,omitempty"`
}

// ReadGCPauses parses every gctrace or -Xlog:gc line of r, skipping the
// rest.
func ReadGCPauses(r io.Reader) (*GCPauses, error) {
	h := NewHistogram()
	out := &GCPauses{}
	var total time.Duration
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	record := func(msText string) {
		v, err := strconv.ParseFloat(msText, 64)
		if err == nil {
			d := time.Duration(v * float64(time.Millisecond))
			h.RecordDuration(d)
			total += d
		}
	}
	for sc.Scan() {
		line := sc.Text()
		if m := goTrace.FindStringSubmatch(line); m != nil {
			out.Cycles++
			record(m[1])
			record(m[2])
			if heap, err := strconv.ParseFloat(m[3], 64); err == nil && heap > out.HeapMaxMB {
				out.HeapMaxMB = heap
			}
			continue
		}
		if m := javaPause.FindStringSubmatch(line); m != nil {
			out.Cycles++
			record(m[1])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: read gc log: %w", err)
	}
	out.Pauses = h.Summarize()
	out.TotalMS = ms(total)
	return out, nil
}
