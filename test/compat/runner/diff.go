package main

import (
	"fmt"
	"strings"
)

// hunk is one run of lines where two transcripts differ: left holds the
// lines only the reference (Apache ZooKeeper) printed, right the lines only
// zkserverd printed, both in order. at is the 1-based line number in the
// left transcript where the hunk starts.
type hunk struct {
	at    int
	left  []string
	right []string
}

// diffLines compares two transcripts line by line (longest common
// subsequence) and returns the hunks where they differ. Transcripts are a
// few hundred lines, so the quadratic table is fine.
func diffLines(a, b []string) []hunk {
	// lcs[i][j] = length of the LCS of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var hunks []hunk
	var cur *hunk
	flush := func() {
		if cur != nil {
			hunks = append(hunks, *cur)
			cur = nil
		}
	}
	open := func(i int) *hunk {
		if cur == nil {
			cur = &hunk{at: i + 1}
		}
		return cur
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			flush()
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			h := open(i)
			h.left = append(h.left, a[i])
			i++
		default:
			h := open(i)
			h.right = append(h.right, b[j])
			j++
		}
	}
	flush()
	return hunks
}

// sideBySide renders a hunk as two columns, reference on the left.
func sideBySide(h hunk, width int) string {
	var b strings.Builder
	rows := max(len(h.left), len(h.right))
	for r := range rows {
		var l, rt string
		if r < len(h.left) {
			l = h.left[r]
		}
		if r < len(h.right) {
			rt = h.right[r]
		}
		fmt.Fprintf(&b, "      %-*s | %s\n", width, clip(l, width), rt)
	}
	return b.String()
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// splitLines splits a transcript into lines without the final newline.
func splitLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
