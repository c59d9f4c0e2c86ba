package zkimport

import (
	"fmt"
	"io"
)

// progress prints plain-text progress lines: one when a phase starts and,
// for phases of at least minTotal units, one each time it passes another
// tenth of its work. A nil *progress or a nil writer prints nothing. Used
// by one goroutine.
type progress struct {
	w        io.Writer
	minTotal int64
	name     string
	total    int64
	done     int64
	shown    int64 // tenths already reported
	bytes    int64 // everything read so far, all phases
}

// phase starts a new phase of total units; size describes it.
func (p *progress) phase(name, size string, total int64) {
	if p == nil {
		return
	}
	p.name, p.total, p.done, p.shown = name, total, 0, 0
	if p.w != nil {
		fmt.Fprintf(p.w, "zkimport: %s (%s)\n", name, size)
	}
}

// add records n units of progress in the current phase.
func (p *progress) add(n int64) {
	if p == nil {
		return
	}
	p.done += n
	p.bytes += n
	if p.w == nil || p.total <= 0 || p.total < p.minTotal {
		return
	}
	tenth := min(p.done*10/p.total, 10)
	if tenth > p.shown {
		p.shown = tenth
		fmt.Fprintf(p.w, "zkimport: %s %3d%%\n", p.name, tenth*10)
	}
}

// humanBytes formats a byte count with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
