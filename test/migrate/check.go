package migrate

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Holding is what the driver read in the tree, before the clients stopped,
// about one client's recipes: the owners (session ids) of its ephemeral
// node (0: missing), of its lock directory's children and of its
// election directory's children.
type Holding struct {
	Ephemeral int64
	Lock      []int64
	Leader    []int64
}

// Input is what Check needs.
type Input struct {
	// Logs are the clients' events by client name.
	Logs map[string][]Event
	// Watches names, per client that sets a watch, the writers whose
	// writes its watch covers.
	Watches map[string][]string
	// Tree holds every node under the writers' directories after the run:
	// path to data.
	Tree map[string]string
	// Holdings are read by the driver while the clients still ran.
	Holdings map[string]Holding
	// SwitchStart and SwitchEnd bound the switch (the takeover, or the
	// leader restart of the dry run); Pause looks at the gaps around it.
	SwitchStart, SwitchEnd time.Time
}

// Gap is a pause between two consecutive acknowledged writes of a client.
type Gap struct {
	Length   time.Duration
	From, To time.Time // the acks before and after it
}

func (g Gap) String() string {
	if g.Length == 0 {
		return "none"
	}
	return fmt.Sprintf("%v (acks at %s and %s)", g.Length.Round(time.Millisecond),
		g.From.UTC().Format("15:04:05.000"), g.To.UTC().Format("15:04:05.000"))
}

// Report is Check's answer. Failures lists every broken promise; the
// rest is for the test log.
type Report struct {
	Failures []string
	// Acks counts each client's acknowledged writes; Errors its failed ones.
	Acks, Errors map[string]int
	// Watched counts, per watching client, the writes its watch had to
	// report (those made while it was connected, see checkWatches).
	Watched map[string]int
	// Pause is each client's longest gap between acks that overlaps the
	// switch; Longest its longest gap in the whole run.
	Pause, Longest map[string]Gap
	// Disconnects counts each client's disconnections.
	Disconnects map[string]int
}

// Worst is the longest switch pause of any client.
func (r Report) Worst() Gap {
	var w Gap
	for _, g := range r.Pause {
		if g.Length > w.Length {
			w = g
		}
	}
	return w
}

// Check reads the clients' events and the final tree and reports what
// went wrong.
func Check(in Input) Report {
	r := Report{
		Acks: map[string]int{}, Errors: map[string]int{}, Watched: map[string]int{},
		Pause: map[string]Gap{}, Longest: map[string]Gap{}, Disconnects: map[string]int{},
	}
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	names := make([]string, 0, len(in.Logs))
	for name := range in.Logs {
		names = append(names, name)
	}
	sort.Strings(names)
	logs := make(map[string][]Event, len(in.Logs))
	for _, name := range names {
		logs[name] = untilFinal(in.Logs[name])
	}
	in.Logs = logs
	for _, name := range names {
		evs := in.Logs[name]
		checkSession(name, evs, in.Holdings[name], fail)
		checkZxids(name, evs, fail)
		r.Acks[name], r.Errors[name] = count(evs, "ack"), count(evs, "write_error")
		r.Disconnects[name] = len(connectedWindows(evs)) - 1
		r.Pause[name], r.Longest[name] = pauses(evs, in.SwitchStart, in.SwitchEnd)
	}
	checkWrites(in.Logs, in.Tree, fail)
	for _, name := range names {
		if writers, ok := in.Watches[name]; ok {
			r.Watched[name] = checkWatches(name, in.Logs, writers, fail)
		}
	}
	return r
}

// untilFinal drops what a client printed after its final line (it is
// closing its session then).
func untilFinal(evs []Event) []Event {
	for i, e := range evs {
		if e.Ev == "final" {
			return evs[:i+1]
		}
	}
	return evs
}

func count(evs []Event, ev string) int {
	n := 0
	for _, e := range evs {
		if e.Ev == ev {
			n++
		}
	}
	return n
}

// lost reports whether a state line says the session ended or the client
// gave up on it.
func lost(e Event) bool {
	switch {
	case e.Ev == "state":
		return e.State == "LOST"
	case e.Ev == "zkstate":
		return e.State == "Expired" || e.State == "Closed" || e.State == "AuthFailed"
	}
	return false
}

// checkSession: the client started, kept one session from start to
// final, never lost it, acquired its lock and leadership once and kept
// them, its ephemeral node is owned by that session, and it printed no
// error.
func checkSession(name string, evs []Event, h Holding, fail func(string, ...any)) {
	var start, final *Event
	moved := false // a session change is reported once
	for i := range evs {
		e := &evs[i]
		switch {
		case e.Ev == "start" && start == nil:
			start = e
		case e.Ev == "final":
			final = e
		case e.Ev == "error":
			fail("%s: error: %s", name, e.Msg)
		case lost(*e):
			fail("%s: session state %s at %s", name, e.State, e.Time().UTC().Format("15:04:05.000"))
		case e.Ev == "leader" && e.State == "lost":
			fail("%s: leadership lost at %s", name, e.Time().UTC().Format("15:04:05.000"))
		}
		if (e.Ev == "held" || e.Ev == "final") && start != nil && e.Session != start.Session && !moved {
			moved = true
			fail("%s: session %s at %s, started with %s", name, e.Session, e.Time().UTC().Format("15:04:05.000"), start.Session)
		}
	}
	if start == nil {
		fail("%s: never started a session", name)
		return
	}
	if n := count(evs, "lock"); n != 1 {
		fail("%s: acquired its lock %d times, want once", name, n)
	}
	if n := countState(evs, "leader", "gained"); n != 1 {
		fail("%s: gained leadership %d times, want once", name, n)
	}
	if final == nil {
		fail("%s: printed no final line (did it stop cleanly?)", name)
	} else if !final.Lock || !final.Leader || final.EphemeralOwner != start.Session {
		fail("%s: at the end holds lock=%v leader=%v, ephemeral owned by %q; want true, true, %s",
			name, final.Lock, final.Leader, final.EphemeralOwner, start.Session)
	}
	checkHolding(name, start.Session, h, fail)
}

func countState(evs []Event, ev, state string) int {
	n := 0
	for _, e := range evs {
		if e.Ev == ev && e.State == state {
			n++
		}
	}
	return n
}

// checkHolding compares what the driver read in the tree with the
// client's session: its ephemeral node and the one node in each recipe
// directory belong to it.
func checkHolding(name, session string, h Holding, fail func(string, ...any)) {
	sid, err := sessionID(session)
	if err != nil {
		fail("%s: %v", name, err)
		return
	}
	if h.Ephemeral != sid {
		fail("%s: ephemeral node owned by %#x in the tree, want its session %s", name, h.Ephemeral, session)
	}
	for what, owners := range map[string][]int64{"lock": h.Lock, "election": h.Leader} {
		if len(owners) != 1 || owners[0] != sid {
			fail("%s: %s directory holds nodes of sessions %s, want one of %s", name, what, hexes(owners), session)
		}
	}
}

func hexes(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprintf("%#x", id)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// checkZxids: the zxids a client saw never go backwards, and its acks'
// zxids rise strictly (its writer waits for each ack before the next).
func checkZxids(name string, evs []Event, fail func(string, ...any)) {
	var seen, acked int64
	var at Event // the line that saw seen
	for _, e := range evs {
		if e.ZxidSeen > 0 || (seen > 0 && e.ZxidSeen == 0) { // -1: the client could not tell
			if e.ZxidSeen < seen {
				fail("%s: zxid went back from %#x (%s line at %s) to %#x (%s line at %s)", name,
					seen, at.Ev, at.Time().UTC().Format("15:04:05.000"), e.ZxidSeen, e.Ev, e.Time().UTC().Format("15:04:05.000"))
				return
			}
			seen, at = e.ZxidSeen, e
		}
		if e.Ev == "ack" {
			if e.Zxid <= acked {
				fail("%s: ack of %s has zxid %#x, not above the previous ack's %#x", name, e.Value, e.Zxid, acked)
				return
			}
			acked = e.Zxid
		}
	}
}

// checkWrites: every acked write is in the tree with its value, no value
// is in the tree twice, no zxid acked twice, and every value in a
// writer's directory is one its client sent.
func checkWrites(logs map[string][]Event, tree map[string]string, fail func(string, ...any)) {
	sent := map[string]bool{}
	zxids := map[int64]string{}
	missing := 0
	for name, evs := range logs {
		for _, e := range evs {
			switch e.Ev {
			case "write_error":
				sent[e.Value] = true
			case "ack":
				sent[e.Value] = true
				if prev, dup := zxids[e.Zxid]; dup {
					fail("zxid %#x acked twice: %s and %s", e.Zxid, prev, e.Value)
				}
				zxids[e.Zxid] = e.Value
				if got, ok := tree[e.Path]; !ok || got != e.Value {
					if missing < 10 {
						fail("%s: acked write %s (%s, zxid %#x) is not in the tree (found %q, present=%v)", name, e.Value, e.Path, e.Zxid, got, ok)
					}
					missing++
				}
			}
		}
	}
	if missing > 10 {
		fail("%d acked writes missing in all (first 10 above)", missing)
	}
	where := map[string][]string{}
	for path, value := range tree {
		where[value] = append(where[value], path)
	}
	for value, paths := range where {
		if len(paths) > 1 {
			slices.Sort(paths)
			fail("value %s is in the tree %d times: %v", value, len(paths), paths)
		}
		if !sent[value] {
			fail("value %q at %v was never sent by a client", value, paths)
		}
	}
}

// connectedWindows splits a client's events at its disconnections: each
// window is the events from a (re)connection to the next disconnection.
// The first window starts at the first event.
func connectedWindows(evs []Event) [][]Event {
	var out [][]Event
	cur, connected := []Event{}, true
	for _, e := range evs {
		down := (e.Ev == "state" && (e.State == "SUSPENDED" || e.State == "LOST")) ||
			(e.Ev == "zkstate" && e.State == "Disconnected")
		up := e.Ev == "state" && (e.State == "RECONNECTED" || e.State == "CONNECTED")
		switch {
		case down && connected:
			out = append(out, cur)
			cur, connected = nil, false
		case up && !connected:
			connected = true
		}
		if connected {
			cur = append(cur, e)
		}
	}
	return append(out, cur)
}

// checkWatches: a watch fires for every change made while its client is
// connected. For each connected window after the watch was set, the
// client's own first and last acks in it bound a zxid range; the watch
// was registered before the first (a reconnecting client sends its
// watches before any request) and a server delivers the events of
// changes up to the last before that ack's reply, so every acked write of
// a covered writer in that range must appear among the client's watch
// events. It returns how many writes it checked.
func checkWatches(name string, logs map[string][]Event, writers []string, fail func(string, ...any)) int {
	evs := logs[name]
	last := -1
	seen := map[string]bool{}
	for i, e := range evs {
		switch e.Ev {
		case "watching":
			last = i
		case "watch":
			seen[e.Path] = true
		}
	}
	if last < 0 {
		fail("%s: never set its watch", name)
		return 0
	}
	type span struct{ lo, hi int64 }
	var spans []span
	for _, w := range connectedWindows(evs[last+1:]) {
		var s span
		for _, e := range w {
			if e.Ev == "ack" {
				if s.lo == 0 {
					s.lo = e.Zxid
				}
				s.hi = e.Zxid
			}
		}
		if s.lo != 0 {
			spans = append(spans, s)
		}
	}
	checked, missed := 0, 0
	for _, writer := range writers {
		for _, e := range logs[writer] {
			if e.Ev != "ack" {
				continue
			}
			in := false
			for _, s := range spans {
				in = in || (e.Zxid >= s.lo && e.Zxid <= s.hi)
			}
			if !in {
				continue
			}
			checked++
			if !seen[e.Path] {
				if missed < 10 {
					fail("%s: no watch event for %s (zxid %#x, written by %s while it was connected)", name, e.Path, e.Zxid, writer)
				}
				missed++
			}
		}
	}
	if missed > 10 {
		fail("%s: %d watch events missing in all (first 10 above)", name, missed)
	}
	if checked == 0 {
		fail("%s: no write fell in a connected window of its watch: nothing was checked", name)
	}
	return checked
}

// pauses returns the client's longest gap between consecutive acks that
// overlaps [from, to], and its longest gap overall. The gap before the
// first ack after the switch counts, however the write that ended it
// started.
func pauses(evs []Event, from, to time.Time) (atSwitch, longest Gap) {
	var prev *Event
	for i := range evs {
		e := &evs[i]
		if e.Ev != "ack" {
			continue
		}
		if prev != nil {
			g := Gap{Length: e.Time().Sub(prev.Time()), From: prev.Time(), To: e.Time()}
			if g.Length > longest.Length {
				longest = g
			}
			overlaps := !g.To.Before(from) && !g.From.After(to)
			if overlaps && g.Length > atSwitch.Length {
				atSwitch = g
			}
		}
		prev = e
	}
	return atSwitch, longest
}
