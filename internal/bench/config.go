package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config describes one benchmark run.
type Config struct {
	// Addrs are the servers' client addresses; session i uses
	// Addrs[i%len(Addrs)].
	Addrs []string
	// Workload is an operation workload or a scenario (see Workloads).
	Workload string
	// ReadPercent is the share of getData in the "mixed" workload.
	ReadPercent int
	// DataSize is the payload of every create and setData, in bytes.
	DataSize int
	// Keys is the number of pre-created znodes that get, set and exists
	// address, spread over directories of ChildrenPerDir children.
	Keys           int
	ChildrenPerDir int
	// Sessions is the number of sessions (connections); InFlight the
	// requests kept outstanding on each.
	Sessions int
	InFlight int
	// Warmup runs the load without recording; Duration is the measured time.
	Warmup   time.Duration
	Duration time.Duration
	// SessionTimeout is requested in every handshake.
	SessionTimeout time.Duration
	// Root is the znode under which everything is created.
	Root string
	// RunID names this run's znodes (default: derived from the clock).
	RunID string
	// Seed seeds the per-session random generators.
	Seed uint64
	// Cleanup deletes the znodes the run created when it ends.
	Cleanup bool
	// Watchers is the number of watching sessions of the watch scenario.
	Watchers int
	// Znodes is the number of znodes the znodes scenario loads, and Settle
	// how long it waits before sampling the server's memory.
	Znodes int
	Settle time.Duration
	// Flat makes the znodes scenario create every znode under one parent
	// (the "one parent holding a million children" shape) instead of one
	// directory per session.
	Flat bool
	// Recursive makes the watch scenario's watchers register one
	// persistent recursive watch (addWatch mode 1) on a parent, armed
	// once, and the writer change a child below it.
	Recursive bool
	// DialWorkers is how many sessions the watch and watchmem scenarios
	// open at once (default 64).
	DialWorkers int
	// ServerPIDs are the server processes whose CPU time and memory are
	// sampled (none: not reported). ProcRoot is normally "/proc".
	ServerPIDs []int
	ProcRoot   string
	// Label names the target in reports ("zookeeper", "zkserverd").
	Label string
	// Name is what reports call this run (default: the workload), so that
	// one workload run with two shapes, such as get at 1x1 for low-load
	// latency, shows as two rows.
	Name string
	// Logger receives progress messages (nil: discarded).
	Logger *slog.Logger
	// PprofURLs are base URLs of the servers' net/http/pprof endpoints
	// (e.g. http://127.0.0.1:6060; see NormalizePprofURL). When set, a run
	// saves for each server a CPU profile of the measured period and a heap
	// profile taken at its end into ProfileDir (default "."), as
	// <Name>-<Label>.cpu.pprof and .heap.pprof (with .<member> before the
	// suffix when there are several), and lists them in Result.Profiles.
	PprofURLs  []string
	ProfileDir string
	// HTTPClient fetches the profiles (nil: http.DefaultClient).
	HTTPClient *http.Client
}

// DefaultConfig returns the defaults of the zkbench command.
func DefaultConfig() Config {
	return Config{
		Addrs:          []string{"127.0.0.1:2181"},
		Workload:       "get",
		ReadPercent:    90,
		DataSize:       100,
		Keys:           1000,
		ChildrenPerDir: 10,
		Sessions:       8,
		InFlight:       16,
		Warmup:         2 * time.Second,
		Duration:       10 * time.Second,
		SessionTimeout: 30 * time.Second,
		Root:           "/zkbench",
		Seed:           1,
		Watchers:       100,
		Znodes:         100000,
		Settle:         2 * time.Second,
		ProcRoot:       "/proc",
	}
}

// Validate reports the first setting that cannot work, naming it.
func (c Config) Validate() error {
	checks := []struct {
		ok  bool
		msg string
	}{
		{len(c.Addrs) > 0, "addrs: at least one server address is needed"},
		{slices.Contains(workloadNames, c.Workload), fmt.Sprintf("workload: %q is not one of %s", c.Workload, strings.Join(workloadNames, ", "))},
		{c.ReadPercent >= 0 && c.ReadPercent <= 100, "read-percent: must be within 0..100"},
		{c.DataSize >= 0 && c.DataSize <= 1<<20, "data-size: must be within 0..1048576"},
		{c.Keys >= 1, "keys: must be at least 1"},
		{c.ChildrenPerDir >= 1, "children-per-dir: must be at least 1"},
		{c.Sessions >= 1, "sessions: must be at least 1"},
		{c.InFlight >= 1, "inflight: must be at least 1"},
		{c.Warmup >= 0, "warmup: must not be negative"},
		{c.Duration > 0, "duration: must be positive"},
		{c.SessionTimeout > 0, "session-timeout: must be positive"},
		{strings.HasPrefix(c.Root, "/") && c.Root != "/" && !strings.HasSuffix(c.Root, "/"), "root: must be an absolute znode path other than /"},
		{c.Watchers >= 1, "watchers: must be at least 1"},
		{c.Znodes >= 1, "znodes: must be at least 1"},
		{c.Settle >= 0, "settle: must not be negative"},
	}
	for _, ch := range checks {
		if !ch.ok {
			return errors.New("bench: " + ch.msg)
		}
	}
	for _, u := range c.PprofURLs {
		if _, err := NormalizePprofURL(u); err != nil {
			return fmt.Errorf("bench: pprof: %w", err)
		}
	}
	return nil
}

// withDefaults fills the fields a caller may leave empty.
func (c Config) withDefaults() Config {
	if c.RunID == "" {
		c.RunID = strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	if c.Name == "" {
		c.Name = c.Workload
	}
	if c.ProcRoot == "" {
		c.ProcRoot = "/proc"
	}
	if c.DialWorkers <= 0 {
		c.DialWorkers = 64
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	urls := make([]string, 0, len(c.PprofURLs))
	for _, u := range c.PprofURLs {
		if n, err := NormalizePprofURL(u); err == nil {
			urls = append(urls, n)
		}
	}
	c.PprofURLs = urls
	return c
}

// addr returns the server address session i uses.
func (c Config) addr(i int) string { return c.Addrs[i%len(c.Addrs)] }

// dialOptions returns the options every session of the run uses.
func (c Config) dialOptions() DialOptions {
	return DialOptions{SessionTimeout: c.SessionTimeout}
}
