package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Transcripts from two servers differ in values that are run-specific by
// nature: zxids (they depend on everything that ran before), session ids,
// wall-clock times and ports. normalize rewrites those values so the rest of
// the transcript can be compared line by line:
//
//   - zxids become Z1, Z2, ... in order of first appearance within the
//     transcript (0 stays 0), so equal zxids stay equal and different ones
//     stay different;
//   - session ids become S1, S2, ... the same way (0 stays 0);
//   - dates (Java's "Thu Dec 03 18:52:02 UTC 2026" and the C client's
//     asctime "Thu Dec  3 18:52:02 2026") and millisecond timestamps
//     become DATE and MS (the epoch stays recognisable as EPOCH);
//   - loopback ports become PORT, each of a run of them too (the quorum
//     and election ports of a server.N line of /zookeeper/config or conf,
//     "127.0.0.1:PORT:PORT:observer;127.0.0.1:PORT");
//   - a line that is a bracketed list ("| [b, a]", zkCli's ls and
//     getEphemerals) has its items sorted: ZooKeeper returns them in hash
//     order.
var (
	zxidRE    = regexp.MustCompile(`(?i)\b([cmp]?zxid)(\s*[=:]\s*)(0x)?([0-9a-f]+)\b`)
	sessionRE = regexp.MustCompile(`(?i)\b(ephemeralOwner|session ?id)(\s*[=:]\s*)(0x)?([0-9a-f]+)\b`)
	dateRE    = regexp.MustCompile(`\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d\d| \d) \d\d:\d\d:\d\d( [A-Z]{2,5})? \d{4}\b`)
	millisRE  = regexp.MustCompile(`\b([cm]time)(\s*[=:]\s*)(\d+)\b`)
	portRE    = regexp.MustCompile(`\b(127\.0\.0\.1|localhost)(:\d+)+\b`)
	portsRE   = regexp.MustCompile(`:\d+`)
	listRE    = regexp.MustCompile(`^\| \[(.*)\]$`)
)

// normalizer carries the zxid and session labels of one transcript.
type normalizer struct {
	zxids    map[string]string
	sessions map[string]string
}

// normalize returns the transcript with run-specific values replaced.
func normalize(transcript string) string {
	n := &normalizer{zxids: map[string]string{}, sessions: map[string]string{}}
	lines := strings.Split(strings.TrimRight(transcript, "\n"), "\n")
	for i, line := range lines {
		lines[i] = n.line(line)
	}
	return strings.Join(lines, "\n") + "\n"
}

func (n *normalizer) line(s string) string {
	s = zxidRE.ReplaceAllStringFunc(s, func(m string) string {
		return relabel(zxidRE, m, n.zxids, "Z")
	})
	s = sessionRE.ReplaceAllStringFunc(s, func(m string) string {
		return relabel(sessionRE, m, n.sessions, "S")
	})
	s = dateRE.ReplaceAllStringFunc(s, func(m string) string {
		if (strings.Contains(m, "Jan 01 00:00:00") || strings.Contains(m, "Jan  1 00:00:00")) && strings.HasSuffix(m, "1970") {
			return "EPOCH"
		}
		return "DATE"
	})
	s = millisRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := millisRE.FindStringSubmatch(m)
		if sub[3] == "0" {
			return m
		}
		return sub[1] + sub[2] + "MS"
	})
	s = portRE.ReplaceAllStringFunc(s, func(m string) string {
		return portsRE.ReplaceAllString(m, ":PORT")
	})
	return sortList(s)
}

// relabel replaces the value in one match of re (groups: key, separator,
// optional 0x, hex digits) with a label from labels, allocating the next
// label on first sight. Zero values are kept.
func relabel(re *regexp.Regexp, match string, labels map[string]string, prefix string) string {
	sub := re.FindStringSubmatch(match)
	value := strings.TrimLeft(strings.ToLower(sub[4]), "0")
	if value == "" {
		return sub[1] + sub[2] + "0"
	}
	label, ok := labels[value]
	if !ok {
		label = fmt.Sprintf("%s%d", prefix, len(labels)+1)
		labels[value] = label
	}
	return sub[1] + sub[2] + label
}

// sortList sorts the items of a "| [a, b]" line.
func sortList(s string) string {
	m := listRE.FindStringSubmatch(s)
	if m == nil || m[1] == "" {
		return s
	}
	items := strings.Split(m[1], ", ")
	slices.Sort(items)
	return "| [" + strings.Join(items, ", ") + "]"
}
