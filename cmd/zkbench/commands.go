package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/internal/bench"
)

// newRootCommand builds the command tree; nothing is global.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:          "zkbench",
		Short:        "Load generator for ZooKeeper-compatible servers",
		SilenceUsage: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCommand(), newWaitCommand(), newCleanCommand(), newReportCommand(), newFreePortCommand())
	root.AddCommand(newPauseCommand())                                          // pause.go
	root.AddCommand(newStormCommand(), newProbeCommand(), newGCPausesCommand()) // scale.go
	return root
}

// output is the flags shared by commands that produce a Result.
type output struct {
	json bool
	out  string
}

func (o *output) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&o.json, "json", false, "print the result as JSON instead of text")
	cmd.Flags().StringVar(&o.out, "out", "", "also write the result as JSON to this file")
}

// write prints res and saves it when asked.
func (o *output) write(cmd *cobra.Command, res *bench.Result) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if o.out != "" {
		if err := os.WriteFile(o.out, data, 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if o.json {
		_, err = cmd.OutOrStdout().Write(data)
		return err
	}
	return bench.FormatText(cmd.OutOrStdout(), res)
}

// target is the flags naming the servers under test.
type target struct {
	addrs string
	pids  string
	label string
}

func (t *target) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.addrs, "addr", "127.0.0.1:2181", "server address(es), comma separated; sessions are spread over them")
	cmd.Flags().StringVar(&t.pids, "server-pid", "", "server process id(s), comma separated, for CPU and memory figures")
	cmd.Flags().StringVar(&t.label, "label", "", "target name in reports, e.g. zookeeper or zkserverd")
}

func (t *target) apply(cfg *bench.Config) error {
	cfg.Addrs = splitList(t.addrs)
	cfg.Label = t.label
	cfg.ServerPIDs = nil
	for _, s := range splitList(t.pids) {
		pid, err := strconv.Atoi(s)
		if err != nil || pid <= 0 {
			return fmt.Errorf("--server-pid: %q is not a process id", s)
		}
		cfg.ServerPIDs = append(cfg.ServerPIDs, pid)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func newRunCommand() *cobra.Command {
	cfg := bench.DefaultConfig()
	var t target
	var o output
	var verbose bool
	var pprofURLs string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one workload or scenario and report throughput, latency and server usage",
		Long: "Workloads: create, set, get, exists, children, multi (70% multi of create+set,\n" +
			"20% getChildren, 5% create, 5% set), mixed (--read-percent getData, the rest setData).\n" +
			"Scenarios: watch (--watchers sessions watch one znode; time from setData to the\n" +
			"last notification), connect (session connect+close rate), znodes (load --znodes\n" +
			"znodes, report server RSS per znode; --flat: all under one parent), watchmem (load\n" +
			"--znodes znodes, then --watchers sessions each watch every one; RSS per watch).\n" +
			"Low-load latency: --sessions 1 --inflight 1.\n" +
			"With --pprof (a Go server's net/http/pprof, e.g. zkserverd --pprof 127.0.0.1:6060),\n" +
			"a CPU profile of the measured period and a heap profile at the end are saved in\n" +
			"--profile-dir as <name>-<label>.cpu.pprof and .heap.pprof; a failed fetch is a warning.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := t.apply(&cfg); err != nil {
				return err
			}
			if verbose {
				cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			}
			cfg.PprofURLs = splitList(pprofURLs)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			res, err := bench.Run(ctx, cfg)
			if res != nil {
				if o.json {
					warnProfiles(cmd.ErrOrStderr(), res)
				}
				if werr := o.write(cmd, res); werr != nil {
					return werr
				}
			}
			return err
		},
	}
	t.register(cmd)
	o.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&cfg.Workload, "workload", cfg.Workload, "one of: "+strings.Join(bench.Workloads(), ", "))
	fl.StringVar(&cfg.Name, "name", "", "name of this run in reports (default: the workload)")
	fl.IntVar(&cfg.ReadPercent, "read-percent", cfg.ReadPercent, "share of getData in the mixed workload")
	fl.IntVar(&cfg.DataSize, "data-size", cfg.DataSize, "bytes written by every create and setData")
	fl.IntVar(&cfg.Keys, "keys", cfg.Keys, "number of pre-created znodes read and written")
	fl.IntVar(&cfg.ChildrenPerDir, "children-per-dir", cfg.ChildrenPerDir, "keys per directory (getChildren size)")
	fl.IntVar(&cfg.Sessions, "sessions", cfg.Sessions, "concurrent sessions (connections)")
	fl.IntVar(&cfg.InFlight, "inflight", cfg.InFlight, "outstanding requests per session")
	fl.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "load before measuring (not recorded)")
	fl.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured time")
	fl.DurationVar(&cfg.SessionTimeout, "session-timeout", cfg.SessionTimeout, "requested session timeout")
	fl.StringVar(&cfg.Root, "root", cfg.Root, "znode under which the benchmark works")
	fl.StringVar(&cfg.RunID, "run-id", "", "names this run's znodes (default: from the clock)")
	fl.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	fl.BoolVar(&cfg.Cleanup, "cleanup", false, "delete the znodes this run created when it ends")
	fl.IntVar(&cfg.Watchers, "watchers", cfg.Watchers, "watching sessions (watch scenario)")
	fl.IntVar(&cfg.Znodes, "znodes", cfg.Znodes, "znodes to load (znodes scenario)")
	fl.DurationVar(&cfg.Settle, "settle", cfg.Settle, "wait after loading before sampling memory (znodes scenario)")
	fl.BoolVar(&cfg.Flat, "flat", false, "znodes and watchmem scenarios: every znode under one parent")
	fl.BoolVar(&cfg.Recursive, "recursive", false, "watch scenario: one persistent recursive watch (addWatch mode 1) per watcher on a parent; the writer changes a child")
	fl.IntVar(&cfg.DialWorkers, "dial-workers", 64, "sessions opened at once (watch and watchmem scenarios)")
	fl.StringVar(&pprofURLs, "pprof", "", "base URL(s) of the servers' Go net/http/pprof, comma separated (e.g. http://127.0.0.1:6060): save CPU and heap profiles of the run")
	fl.StringVar(&cfg.ProfileDir, "profile-dir", ".", "directory for the --pprof profiles")
	fl.BoolVarP(&verbose, "verbose", "v", false, "log progress to stderr")
	return cmd
}

// warnProfiles prints the profile fetch failures of res, which the JSON
// output would otherwise only carry inside the document.
func warnProfiles(w io.Writer, res *bench.Result) {
	for _, p := range res.Profiles {
		for _, msg := range p.Warnings {
			fmt.Fprintf(w, "zkbench: warning: %s: %s\n", p.URL, msg)
		}
	}
}

func newWaitCommand() *cobra.Command {
	cfg := bench.DefaultConfig()
	var t target
	var o output
	var sinceNS int64
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait",
		Short: "Wait until a server answers getData(\"/\") and report how long that took (restart time)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := t.apply(&cfg); err != nil {
				return err
			}
			since := time.Now()
			if sinceNS > 0 {
				since = time.Unix(0, sinceNS)
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			res, err := bench.WaitReady(ctx, cfg, since)
			if err != nil {
				return err
			}
			return o.write(cmd, res)
		},
	}
	t.register(cmd)
	o.register(cmd)
	cmd.Flags().Int64Var(&sinceNS, "since-unix-ns", 0, "measure from this wall-clock time in Unix nanoseconds (e.g. $(date +%s%N) taken just before starting the server); default: now")
	cmd.Flags().DurationVar(&timeout, "timeout", 120*time.Second, "give up after this long")
	return cmd
}

func newCleanCommand() *cobra.Command {
	cfg := bench.DefaultConfig()
	var t target
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Delete the benchmark's znodes (--root and everything under it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := t.apply(&cfg); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			n, err := bench.DeleteTree(ctx, cfg, cfg.Root)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %d znodes under %s in %.1fs\n", n, cfg.Root, time.Since(start).Seconds())
			return nil
		},
	}
	t.register(cmd)
	cmd.Flags().StringVar(&cfg.Root, "root", cfg.Root, "znode to delete with its subtree")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	return cmd
}

func newReportCommand() *cobra.Command {
	var dir, baseline, candidate, csvPath, jsonPath, svgPath string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Summarize result files: medians with min-max per target and the candidate/baseline ratio",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			results, err := bench.LoadResults(dir)
			if err != nil {
				return err
			}
			if len(results) == 0 {
				return fmt.Errorf("--dir: no *.json results in %s", dir)
			}
			c := bench.Summarize(results, baseline, candidate)
			for _, f := range []struct {
				path  string
				write func(io.Writer) error
			}{{csvPath, c.WriteCSV}, {jsonPath, c.WriteJSON}, {svgPath, c.WriteSVG}} {
				if err := writeFile(f.path, f.write); err != nil {
					return err
				}
			}
			return c.WriteTable(cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", ".", "directory of result JSON files (zkbench run --out)")
	fl.StringVar(&baseline, "baseline", "zookeeper", "label of the reference target")
	fl.StringVar(&candidate, "candidate", "zkserverd", "label of the target compared with it")
	fl.StringVar(&csvPath, "csv", "", "write the summary as CSV to this file")
	fl.StringVar(&jsonPath, "summary-json", "", "write the summary as JSON to this file")
	fl.StringVar(&svgPath, "svg", "", "write a throughput and p99 chart as SVG to this file")
	return cmd
}

// writeFile creates path and fills it with write; an empty path is skipped.
func writeFile(path string, write func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func newFreePortCommand() *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "freeport",
		Short: "Print free TCP ports on 127.0.0.1, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lns []net.Listener
			defer func() {
				for _, ln := range lns {
					ln.Close()
				}
			}()
			for range n {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					return err
				}
				lns = append(lns, ln)
				fmt.Fprintln(cmd.OutOrStdout(), ln.Addr().(*net.TCPAddr).Port)
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&n, "count", "n", 1, "how many ports")
	return cmd
}
