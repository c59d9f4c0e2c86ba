package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// The takeover's part of a mirror's status endpoint:
//
//	POST /takeover/freeze          hold client writes, sync with the ZooKeeper
//	                               leader: {"last_zxid": "0x...", "digest": n}
//	POST /takeover/unfreeze        back to mirroring
//	POST /takeover/switch?seed=B   become a zkserverd member (B: true seeds it
//	                               with the mirrored state, false joins empty)
//
// and the fields takeoverStatus adds to GET /mirror. A step refused in the
// current phase, a switch while a ZooKeeper voter is reachable, and a
// seed from a mirror whose last sync did not finish answer 409, a mirror
// without --takeover-config 412, any other failure 500; the body is then
// {"error": "...", "phase": "..."}.

// takeoverStatus are GET /mirror's takeover fields.
type takeoverStatus struct {
	Phase              string `json:"phase"`
	ZooKeeperReachable bool   `json:"zookeeper_reachable"`
	// TakeoverConfig: the mirror has a --takeover-config (it can switch).
	TakeoverConfig bool `json:"takeover_config"`
	// Seedable: the mirrored state is whole (no sync with ZooKeeper's
	// leader left half done, not diverged), so it may seed the ensemble.
	Seedable bool `json:"seedable"`
	// After the switch: whether this member was seeded, its mode
	// (standalone, leader, follower...) once serving, and the failure.
	Seeded        bool   `json:"seeded,omitempty"`
	Mode          string `json:"mode,omitempty"`
	TakeoverError string `json:"takeover_error,omitempty"`
}

// status returns the takeover fields; it probes the ZooKeeper voters, in
// every phase (after the switch, a voter that comes back shows).
func (t *takeover) status(ctx context.Context) takeoverStatus {
	t.mu.Lock()
	s := takeoverStatus{Phase: t.phase, Seeded: t.seeded, TakeoverConfig: t.opts.configPath != "", Seedable: t.opts.st.Synced()}
	if t.err != nil {
		s.TakeoverError = t.err.Error()
	}
	member := t.member
	t.mu.Unlock()
	if member != nil && member.Serving() {
		s.Mode = member.Mode()
	}
	s.ZooKeeperReachable = t.ZooKeeperReachable(ctx)
	return s
}

// ready reports whether GET /ready answers 200 after the switch began:
// in phase serving only. Before the switch the mirror's own readiness
// holds.
func (t *takeover) ready() (ready, decided bool) {
	if !t.switched() {
		return false, false
	}
	return t.Phase() == phaseServing, true
}

// routes registers the takeover's endpoints on mux.
func (t *takeover) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /takeover/freeze", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		zxid, digest, err := t.Freeze(ctx)
		if err != nil {
			t.writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"last_zxid": zxidHex(zxid), "digest": digest, "phase": t.Phase()})
	})
	mux.HandleFunc("POST /takeover/unfreeze", func(w http.ResponseWriter, _ *http.Request) {
		if err := t.Unfreeze(); err != nil {
			t.writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"phase": t.Phase()})
	})
	mux.HandleFunc("POST /takeover/switch", func(w http.ResponseWriter, r *http.Request) {
		seed, err := strconv.ParseBool(r.URL.Query().Get("seed"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "seed=true or seed=false is required", "phase": t.Phase()})
			return
		}
		if err := t.Switch(r.Context(), seed); err != nil {
			t.writeError(w, err)
			return
		}
		t.mu.Lock()
		last := t.lastZxid
		t.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"phase": t.Phase(), "seeded": seed, "last_zxid": zxidHex(last)})
	})
}

// writeError answers a step's failure.
func (t *takeover) writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errPhase), errors.Is(err, errZooKeeperReachable), errors.Is(err, errNotSeedable):
		code = http.StatusConflict
	case errors.Is(err, errNoTakeoverConfig):
		code = http.StatusPreconditionFailed
	}
	writeJSON(w, code, map[string]any{"error": err.Error(), "phase": t.Phase()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
