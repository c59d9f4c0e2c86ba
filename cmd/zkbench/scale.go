package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/internal/bench"
)

// writeJSON prints v as indented JSON to w and, with a path, into that
// file too.
func writeJSON(w io.Writer, path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path != "" {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	_, err = w.Write(b)
	return err
}

// loadAvg returns the first three fields of /proc/loadavg ("" if unread).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// newStormCommand runs bench.RunStorm.
func newStormCommand() *cobra.Command {
	var cfg bench.StormConfig
	var addrs, sources, out string
	var killAtNS int64
	cmd := &cobra.Command{
		Use:   "storm",
		Short: "Hold many idle sessions on an ensemble, kill one member and time the reconnect storm",
		Long: "storm opens --sessions minimal sessions (connect and ping only), session i on member\n" +
			"i%len(--addr), from --source i%len(--source); holds them --hold; sends SIGKILL to\n" +
			"--kill-pid (the member to kill: a third of the sessions); and times until every lost\n" +
			"session is reconnected to another member with its id and password (each waits a random\n" +
			"delay up to --jitter first, as ZooKeeper's Java client). It then watches them --after\n" +
			"longer and reports sessions lost, back, expired and the reconnect times as JSON.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Addrs = strings.Split(addrs, ",")
			if sources != "" {
				cfg.Sources = strings.Split(sources, ",")
			}
			if killAtNS > 0 {
				cfg.KillAt = time.Unix(0, killAtNS)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			res, err := bench.RunStorm(ctx, cfg)
			if err != nil {
				return err
			}
			res.LoadAvg = loadAvg()
			return writeJSON(cmd.OutOrStdout(), out, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addrs, "addr", "127.0.0.1:2181", "members' client addresses, comma separated")
	fl.StringVar(&sources, "source", "", "local addresses to connect from, comma separated (e.g. 127.0.0.2,127.0.0.3)")
	fl.IntVar(&cfg.Sessions, "sessions", 1000, "idle sessions to hold")
	fl.IntVar(&cfg.Dialers, "dialers", 256, "sessions being opened at once")
	fl.DurationVar(&cfg.SessionTimeout, "session-timeout", 30*time.Second, "requested session timeout")
	fl.DurationVar(&cfg.Hold, "hold", 5*time.Second, "idle time before the kill")
	fl.DurationVar(&cfg.After, "after", 0, "watch time once all are back (default: the session timeout)")
	fl.IntVar(&cfg.KillPID, "kill-pid", 0, "process to SIGKILL after --hold (0: none)")
	fl.Int64Var(&killAtNS, "kill-at-unix-ns", 0, "kill at this Unix time in ns instead of after --hold; without --kill-pid only count the sessions lost from then (several storm processes share one kill)")
	fl.DurationVar(&cfg.Jitter, "jitter", time.Second, "random delay bound before each reconnect (negative: none)")
	fl.DurationVar(&cfg.Timeout, "timeout", 2*time.Minute, "give up waiting for the lost sessions after this long")
	fl.StringVar(&out, "out", "", "also write the JSON result to this file")
	return cmd
}

// newProbeCommand runs bench.RunProbe.
func newProbeCommand() *cobra.Command {
	var cfg bench.ProbeConfig
	var snapDirs, out string
	var sinceNS int64
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Write steadily and report latency while snapshots are written or a member catches up",
		Long: "probe writes --path every --interval from one session (and keeps --load-inflight\n" +
			"writes in flight on each of --load-sessions more) on --addr for --duration, polls\n" +
			"--snap-dir for snapshot files being written (their write time and size), and reports\n" +
			"write latency overall and while a snapshot was written, and the longest gap between\n" +
			"two acknowledged probe writes. With --ready-addr it ends --after that member serves\n" +
			"--path (a wiped member's catch-up), reporting ready_ms since --since-unix-ns.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if snapDirs != "" {
				cfg.SnapDirs = strings.Split(snapDirs, ",")
			}
			if sinceNS > 0 {
				cfg.Since = time.Unix(0, sinceNS)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			res, err := bench.RunProbe(ctx, cfg)
			if res != nil {
				if werr := writeJSON(cmd.OutOrStdout(), out, struct {
					*bench.ProbeResult
					LoadAvg string `json:"loadavg"`
				}{res, loadAvg()}); werr != nil {
					return werr
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Addr, "addr", "127.0.0.1:2181", "member to write to")
	fl.DurationVar(&cfg.Interval, "interval", 10*time.Millisecond, "time between two probe writes")
	fl.IntVar(&cfg.LoadSessions, "load-sessions", 0, "sessions of background setData load")
	fl.IntVar(&cfg.LoadInFlight, "load-inflight", 8, "writes in flight per load session")
	fl.IntVar(&cfg.DataSize, "data-size", 100, "bytes per write")
	fl.DurationVar(&cfg.Duration, "duration", time.Minute, "longest probe")
	fl.DurationVar(&cfg.After, "after", 2*time.Second, "probe this long past --ready-addr's readiness")
	fl.StringVar(&cfg.ReadyAddr, "ready-addr", "", "member whose catch-up is timed (serves --path)")
	fl.Int64Var(&sinceNS, "since-unix-ns", 0, "ready_ms counts from this Unix time in ns (default: the start)")
	fl.StringVar(&cfg.Path, "path", "/zkbench-probe", "znode the probe writes")
	fl.StringVar(&snapDirs, "snap-dir", "", "directories polled for snapshot files, comma separated")
	fl.StringVar(&cfg.SnapMatch, "snap-match", bench.DefaultSnapMatch, "regexp of snapshot file base names")
	fl.StringVar(&out, "out", "", "also write the JSON result to this file")
	return cmd
}

// newGCPausesCommand summarizes the GC pauses in server logs.
func newGCPausesCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "gcpauses LOG",
		Short: "Summarize garbage-collector pauses from a GODEBUG=gctrace=1 or -Xlog:gc log",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			res, err := bench.ReadGCPauses(f)
			if err != nil {
				return err
			}
			return writeJSON(cmd.OutOrStdout(), out, res)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "also write the JSON result to this file")
	return cmd
}
