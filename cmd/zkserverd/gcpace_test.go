package main

import (
	"io"
	"log/slog"
	"testing"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},               // nothing measured yet: the default
		{8 * mib, 100},         // the floor is far above a small heap
		{64 * mib, 100},        // floor == live
		{128 * mib, 50},        // the floor still rules
		{1024 * mib, 25},       // the share rules
		{10 * 1024 * mib, 25},  // and keeps ruling
		{256 * mib, 25},        // the floor's reach ends at floor/share
		{240 * mib, 27},        // and just below it the floor wins
		{1 << 40, 25},          // no overflow for a huge heap
		{gcHeadroomFloor, 100}, // exactly the floor
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live/mib, got, c.want)
		}
	}
}

func TestGCPacerLeavesOperatorsGOGC(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	getenv := func(k string) string {
		if k == "GOGC" {
			return "100"
		}
		return ""
	}
	if p := newGCPacer(getenv, logger); p != nil {
		t.Fatal("a pacer was made although GOGC is set")
	}
	if p := newGCPacer(func(string) string { return "" }, logger); p == nil {
		t.Fatal("no pacer without GOGC")
	}
}

func TestGCPacerSetsOnChangeOnly(t *testing.T) {
	const mib = 1 << 20
	p := newGCPacer(func(string) string { return "" }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var set []int
	p.setPercent = func(v int) int { set = append(set, v); return 0 }
	for _, live := range []uint64{
		10 * mib,   // default: nothing to set
		1024 * mib, // 25
		1000 * mib, // still 25
		237 * mib,  // 27, two points from 25: set
		230 * mib,  // 28, a point from 27: kept
		20 * mib,   // back to the default, always set
	} {
		p.pace(live)
	}
	want := []int{25, 27, 100}
	if len(set) != len(want) {
		t.Fatalf("set %v, want %v", set, want)
	}
	for i := range want {
		if set[i] != want[i] {
			t.Fatalf("set %v, want %v", set, want)
		}
	}
}
