package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// takeoverFlags are `zkserverd takeover`'s flags.
type takeoverFlags struct {
	mirrors []string // status endpoints, http://host:port
	timeout time.Duration
	poll    time.Duration // between status reads while waiting
}

// newTakeoverCommand builds `zkserverd takeover`: the mirrors of a
// ZooKeeper ensemble become a zkserverd ensemble of their own, every
// session and zxid kept (takeover.go has the mirror's side).
func newTakeoverCommand() *cobra.Command {
	f := takeoverFlags{poll: 100 * time.Millisecond}
	cmd := &cobra.Command{
		Use:   "takeover --mirror http://HOST:PORT [--mirror ...]",
		Short: "Switch the mirrors of a ZooKeeper ensemble to a zkserverd ensemble of their own",
		Long: "takeover freezes every mirror (zkserverd mirror --takeover-config), waits until the\n" +
			"ZooKeeper voters are stopped (it says when to stop them), seeds the mirror with the\n" +
			"highest last zxid with the mirrored tree, sessions and zxid, has the others join it\n" +
			"empty, and waits until every member serves. Before the switch any failure un-freezes\n" +
			"the mirrors, which go on mirroring; start the voters again if they were stopped.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runTakeover(ctx, cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.mirrors, "mirror", nil, "a mirror's status endpoint (its --status-addr), e.g. http://10.0.0.4:8080; repeat for each mirror")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Minute, "how long to wait for the ZooKeeper voters to become unreachable, and then for the members to serve")
	cmd.MarkFlagRequired("mirror")
	return cmd
}

// mirrorClient talks to one mirror's status endpoint.
type mirrorClient struct {
	base string
	http *http.Client
}

func newMirrorClient(url string) mirrorClient {
	base := strings.TrimSuffix(url, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return mirrorClient{base: base, http: &http.Client{}}
}

// status reads GET /mirror.
func (c mirrorClient) status(ctx context.Context) (mirrorStatus, error) {
	var s mirrorStatus
	err := c.do(ctx, http.MethodGet, "/mirror", &s)
	return s, err
}

// post calls a takeover step and decodes its answer into out.
func (c mirrorClient) post(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodPost, path, out)
}

// do sends a request; a non-2xx answer's "error" becomes the error.
func (c mirrorClient) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, c.base+path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, c.base+path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
		}
		return fmt.Errorf("%s %s: %s: %s", method, c.base+path, resp.Status, e.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: %w", method, c.base+path, err)
	}
	return nil
}

// takeoverRun is one run of the command.
type takeoverRun struct {
	f       takeoverFlags
	out     io.Writer
	mirrors []mirrorClient
}

// runTakeover runs the takeover; see newTakeoverCommand.
func runTakeover(ctx context.Context, out io.Writer, f takeoverFlags) error {
	if len(f.mirrors) == 0 {
		return errors.New("takeover: name at least one --mirror")
	}
	r := &takeoverRun{f: f, out: out}
	for _, m := range f.mirrors {
		r.mirrors = append(r.mirrors, newMirrorClient(m))
	}
	if err := r.check(ctx); err != nil {
		return err
	}
	frozenAt := time.Now()
	if err := r.freeze(ctx); err != nil {
		return r.rollBack(err)
	}
	statuses, err := r.awaitZooKeeperStopped(ctx)
	if err != nil {
		return r.rollBack(err)
	}
	seeder := chooseSeeder(statuses)
	if err := checkSeeder(statuses, seeder); err != nil {
		return r.rollBack(err)
	}
	switchedAt := time.Now()
	if err := r.switchAll(ctx, statuses, seeder); err != nil {
		return err
	}
	firstServing, err := r.awaitServing(ctx)
	if err != nil {
		return err
	}
	allServing := time.Now()
	last := statuses[seeder].LastZxid
	fmt.Fprintf(out, "took over at zxid %s: %d members serve, seeded from mirror %d\n", last, len(r.mirrors), statuses[seeder].MyID)
	fmt.Fprintf(out, "  pause:  %s (freeze to the first member serving; it includes stopping the voters)\n", firstServing.Sub(frozenAt).Round(time.Millisecond))
	fmt.Fprintf(out, "  switch: %s (first switch to every member serving)\n", allServing.Sub(switchedAt).Round(time.Millisecond))
	return nil
}

// check reads every mirror's status: each must answer, follow its
// ensemble (synced, or frozen from an earlier run) and not have begun a
// switch.
func (r *takeoverRun) check(ctx context.Context) error {
	for _, m := range r.mirrors {
		s, err := m.status(ctx)
		if err != nil {
			return fmt.Errorf("takeover: %w", err)
		}
		if s.Phase != phaseMirroring && s.Phase != phaseFrozen {
			return fmt.Errorf("takeover: mirror %d (%s) is in phase %q, not mirroring", s.MyID, m.base, s.Phase)
		}
		if !s.Synced || s.Error != "" {
			return fmt.Errorf("takeover: mirror %d (%s) is not synced with ZooKeeper's leader %s", s.MyID, m.base, s.Error)
		}
		if !s.TakeoverConfig {
			return fmt.Errorf("takeover: mirror %d (%s) runs without --takeover-config", s.MyID, m.base)
		}
	}
	return nil
}

// freeze freezes every mirror.
func (r *takeoverRun) freeze(ctx context.Context) error {
	for _, m := range r.mirrors {
		var ans struct {
			LastZxid string `json:"last_zxid"`
		}
		if err := m.post(ctx, "/takeover/freeze", &ans); err != nil {
			return fmt.Errorf("takeover: freeze: %w", err)
		}
		fmt.Fprintf(r.out, "froze %s at zxid %s\n", m.base, ans.LastZxid)
	}
	return nil
}

// awaitZooKeeperStopped tells the operator to stop the voters and waits,
// at most --timeout, until no mirror can reach any; it returns the
// mirrors' statuses then.
func (r *takeoverRun) awaitZooKeeperStopped(ctx context.Context) ([]mirrorStatus, error) {
	fmt.Fprintln(r.out, "every mirror is frozen. Stop the ZooKeeper voters now (the followers first, the leader last);")
	fmt.Fprintf(r.out, "the switch starts once no mirror reaches any voter (waiting at most %s)\n", r.f.timeout)
	ctx, cancel := context.WithTimeout(ctx, r.f.timeout)
	defer cancel()
	start := time.Now()
	var reachable []int64 // as last read
	stillReachable := func() error {
		return fmt.Errorf("takeover: ZooKeeper voters are still reachable from mirrors %v after %s", reachable, r.f.timeout)
	}
	for {
		statuses, now, err := r.statuses(ctx)
		if err != nil {
			if ctx.Err() != nil && reachable != nil {
				return nil, stillReachable() // the wait ran out during a read
			}
			return nil, err
		}
		if reachable = now; len(reachable) == 0 {
			fmt.Fprintf(r.out, "no ZooKeeper voter is reachable from any mirror (after %s)\n", time.Since(start).Round(time.Millisecond))
			return statuses, nil
		}
		select {
		case <-ctx.Done():
			return nil, stillReachable()
		case <-time.After(r.f.poll):
		}
	}
}

// statuses reads every mirror's status; it fails when one does not
// answer or is no longer frozen. reachable lists the myids of the mirrors
// that still reach a ZooKeeper voter.
func (r *takeoverRun) statuses(ctx context.Context) (all []mirrorStatus, reachable []int64, err error) {
	for _, m := range r.mirrors {
		s, err := m.status(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("takeover: %w", err)
		}
		if s.Phase != phaseFrozen {
			return nil, nil, fmt.Errorf("takeover: mirror %d (%s) left the frozen phase: %s", s.MyID, m.base, s.Phase)
		}
		if s.ZooKeeperReachable {
			reachable = append(reachable, s.MyID)
		}
		all = append(all, s)
	}
	return all, reachable, nil
}

// chooseSeeder returns the index of the mirror to seed the ensemble among
// the seedable ones: the highest last zxid, the lowest myid among equals;
// -1 if none is seedable.
func chooseSeeder(statuses []mirrorStatus) int {
	best, bestZxid := -1, uint64(0)
	for i, s := range statuses {
		z, err := parseZxid(s.LastZxid)
		if err != nil || !s.Seedable {
			continue
		}
		if best < 0 || uint64(z) > bestZxid || (uint64(z) == bestZxid && s.MyID < statuses[best].MyID) {
			best, bestZxid = i, uint64(z)
		}
	}
	return best
}

// checkSeeder refuses a takeover that would lose transactions: when no
// mirror is seedable, or when a mirror whose last sync was cut short has
// applied a zxid beyond the seeder's (it may hold writes ZooKeeper
// acknowledged that no whole state holds).
func checkSeeder(statuses []mirrorStatus, seeder int) error {
	if seeder < 0 {
		return errors.New("takeover: no mirror holds a whole state to seed from (each one's last sync with ZooKeeper's leader was cut short); start the voters again")
	}
	best, _ := parseZxid(statuses[seeder].LastZxid)
	for _, s := range statuses {
		if z, err := parseZxid(s.LastZxid); err == nil && !s.Seedable && uint64(z) > uint64(best) {
			return fmt.Errorf("takeover: mirror %d reached zxid %s in a sync with ZooKeeper's leader that was cut short, beyond the best whole state (%s at mirror %d); start the voters again",
				s.MyID, s.LastZxid, statuses[seeder].LastZxid, statuses[seeder].MyID)
		}
	}
	return nil
}

// switchAll switches the seeder, then the others. A failure of the
// seeder stops there: the others stay frozen, holding the state.
func (r *takeoverRun) switchAll(ctx context.Context, statuses []mirrorStatus, seeder int) error {
	fmt.Fprintf(r.out, "seeding from mirror %d (last zxid %s)\n", statuses[seeder].MyID, statuses[seeder].LastZxid)
	order := []int{seeder}
	for i := range r.mirrors {
		if i != seeder {
			order = append(order, i)
		}
	}
	var errs []error
	for _, i := range order {
		seed := i == seeder
		path := fmt.Sprintf("/takeover/switch?seed=%t", seed)
		if err := r.mirrors[i].post(ctx, path, nil); err != nil {
			if seed {
				return fmt.Errorf("takeover: the seeding mirror failed; the other mirrors stay frozen and hold the state "+
					"(start the ZooKeeper voters again and POST /takeover/unfreeze to them, or run takeover with them): %w", err)
			}
			errs = append(errs, err)
			continue
		}
		how := "joins it"
		if seed {
			how = "seeded"
		}
		fmt.Fprintf(r.out, "switched mirror %d (%s): %s\n", statuses[i].MyID, r.mirrors[i].base, how)
	}
	if len(errs) > 0 {
		return fmt.Errorf("takeover: the seeded member runs, but some mirrors did not switch: %w", errors.Join(errs...))
	}
	return nil
}

// awaitServing waits, at most --timeout, until every member serves; it
// returns when the first did.
func (r *takeoverRun) awaitServing(ctx context.Context) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, r.f.timeout)
	defer cancel()
	var first time.Time
	serving := make([]bool, len(r.mirrors))
	for {
		for i, m := range r.mirrors {
			if serving[i] {
				continue
			}
			s, err := m.status(ctx)
			switch {
			case err != nil:
				continue // a member's endpoint may be slow while it starts
			case s.Phase == phaseFailed:
				return first, fmt.Errorf("takeover: mirror %d (%s) failed: %s", s.MyID, m.base, s.TakeoverError)
			case s.Phase == phaseServing:
				serving[i] = true
				if first.IsZero() {
					first = time.Now()
				}
				fmt.Fprintf(r.out, "member %d (%s) serves: %s\n", s.MyID, m.base, s.Mode)
			}
		}
		if !slices.Contains(serving, false) {
			return first, nil
		}
		select {
		case <-ctx.Done():
			var waiting []string
			for i, ok := range serving {
				if !ok {
					waiting = append(waiting, r.mirrors[i].base)
				}
			}
			return first, fmt.Errorf("takeover: members %v do not serve after %s", waiting, r.f.timeout)
		case <-time.After(r.f.poll):
		}
	}
}

// rollBack un-freezes every mirror after a failure before the switch and
// returns err.
func (r *takeoverRun) rollBack(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, m := range r.mirrors {
		if uerr := m.post(ctx, "/takeover/unfreeze", nil); uerr != nil {
			fmt.Fprintf(r.out, "could not un-freeze %s: %v\n", m.base, uerr)
			continue
		}
		fmt.Fprintf(r.out, "un-froze %s: it goes on mirroring\n", m.base)
	}
	return err
}
