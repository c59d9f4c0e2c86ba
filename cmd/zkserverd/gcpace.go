package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The collector's headroom for a large tree (docs/operations.md,
// "Processors and the collector").
//
// With the runtime's default GOGC=100 the heap may grow to twice the live
// heap before a collection, and the process keeps about that much
// resident: for a server whose live heap is mostly the tree, twice the
// tree. A tree only grows by writes, each of which allocates a few KiB at
// most, so a large tree needs far less headroom than its own size for the
// collector to keep up. Unless the operator set GOGC, the server therefore
// bounds the headroom by the live heap's size: after each sample of the
// live heap (every gcPaceInterval) it sets the GC percent so that the
// heap may grow by max(gcHeadroomFloor, gcHeadroomShare of the live heap)
// between collections, never more than the runtime's default 100%.
//
// Below gcHeadroomFloor of live heap nothing changes from the default; up
// to gcHeadroomFloor/gcHeadroomShare (256 MiB, about a million znodes of
// 100 bytes) the floor rules, which keeps a small server from collecting
// for every few MiB allocated. The price is collector CPU on a large tree under writes: a
// collection marks the whole tree, and they come 1/gcHeadroomShare times
// as often per byte allocated as with GOGC=100 (measured in
// docs/perf/compact-2026-12-03.txt). It depends on the tree's size only,
// not on the machine: the server behaves the same on 2 cores and on 64.

const (
	// gcHeadroomShare is the heap's growth between collections as a
	// share of the live heap, for a live heap above the floor's reach.
	gcHeadroomShare = 0.25
	// gcHeadroomFloor is the least growth allowed between collections.
	gcHeadroomFloor = 64 << 20
	// gcPaceInterval is how often the live heap is sampled.
	gcPaceInterval = time.Second
	// gcDefaultPercent is the runtime's own GOGC default.
	gcDefaultPercent = 100
)

// gcPercentFor returns the GC percent that lets a live heap of live bytes
// grow by max(gcHeadroomFloor, gcHeadroomShare*live) before the next
// collection, at most gcDefaultPercent.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return gcDefaultPercent
	}
	headroom := max(float64(gcHeadroomFloor), gcHeadroomShare*float64(live))
	pct := int(100*headroom/float64(live) + 0.5)
	return min(pct, gcDefaultPercent)
}

// gcPacer sets the GC percent from the live heap. Its fields belong to
// the goroutine running run.
type gcPacer struct {
	log     *slog.Logger
	samples []metrics.Sample
	// percent is the GC percent last set (gcDefaultPercent at start).
	percent int
	// setPercent sets the runtime's GC percent (debug.SetGCPercent).
	setPercent func(int) int
}

// newGCPacer returns the pacer, or nil when the operator set GOGC (as
// getenv reports it): the operator's value then stays.
func newGCPacer(getenv func(string) string, logger *slog.Logger) *gcPacer {
	if getenv("GOGC") != "" {
		logger.Info("garbage collector", "gogc", getenv("GOGC"), "source", "GOGC")
		return nil
	}
	logger.Info("garbage collector", "headroom_share", gcHeadroomShare, "headroom_floor_bytes", gcHeadroomFloor,
		"source", "the live heap (GOGC unset)")
	return &gcPacer{
		log:        logger,
		samples:    []metrics.Sample{{Name: "/gc/heap/live:bytes"}},
		percent:    gcDefaultPercent,
		setPercent: debug.SetGCPercent,
	}
}

// run samples the live heap every gcPaceInterval and paces the collector
// until ctx ends. A nil pacer does nothing.
func (p *gcPacer) run(ctx context.Context) {
	if p == nil {
		return
	}
	t := time.NewTicker(gcPaceInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.pace(p.liveHeap())
		}
	}
}

// liveHeap returns the live heap the last collection marked; 0 when the
// runtime does not report it.
func (p *gcPacer) liveHeap() uint64 {
	metrics.Read(p.samples)
	if p.samples[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return p.samples[0].Value.Uint64()
}

// pace sets the GC percent for a live heap of live bytes when it differs
// from the one set, by more than a point unless it is the default (no
// change for every sample's noise). A change is logged at debug level.
func (p *gcPacer) pace(live uint64) {
	want := gcPercentFor(live)
	if d := want - p.percent; d == 0 || (d >= -1 && d <= 1 && want != gcDefaultPercent) {
		return
	}
	p.setPercent(want)
	p.log.Debug("garbage collector percent", "percent", want, "live_heap_bytes", live)
	p.percent = want
}
