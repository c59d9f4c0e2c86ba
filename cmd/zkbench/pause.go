package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/internal/bench"
)

// newPauseCommand runs bench.RunPauseWriter until SIGINT, SIGTERM or
// --duration, then reports the longest write pause of each restart the
// --marks file lists (scripts/rolling-restart.sh writes it meanwhile).
func newPauseCommand() *cobra.Command {
	var (
		addrs    string
		cfg      bench.PauseConfig
		rate     int
		duration time.Duration
		marks    string
		out      string
	)
	cmd := &cobra.Command{
		Use:   "pause",
		Short: "Write at a steady rate until stopped and report the longest write pause per restart",
		Long: "pause writes one znode at --rate writes a second from one client that retries at once\n" +
			"(on the next member when its connection fails) until SIGINT, SIGTERM or --duration. Then\n" +
			"it reads --marks (lines \"label start-unix-ns end-unix-ns\", one per restart) and prints,\n" +
			"per restart, the longest gap between two acknowledged writes that ends in its window.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Addrs = strings.Split(addrs, ",")
			if rate <= 0 {
				return fmt.Errorf("--rate %d: must be positive", rate)
			}
			cfg.Interval = time.Second / time.Duration(rate)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			log, err := bench.RunPauseWriter(ctx, cfg)
			if err != nil {
				return err
			}
			var ms []bench.PauseMark
			if marks != "" {
				f, err := os.Open(marks)
				if err != nil {
					return fmt.Errorf("--marks: %w", err)
				}
				ms, err = bench.ReadPauseMarks(f)
				f.Close()
				if err != nil {
					return fmt.Errorf("--marks %s: %w", marks, err)
				}
			}
			w := cmd.OutOrStdout()
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return fmt.Errorf("--out: %w", err)
				}
				defer f.Close()
				w = f
			}
			return log.WritePauseReport(w, ms)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addrs, "addr", "127.0.0.1:2181", "comma-separated server addresses")
	fl.IntVar(&rate, "rate", 100, "writes a second")
	fl.DurationVar(&cfg.WriteTimeout, "write-timeout", 2*time.Second, "a write not answered by then counts as failed and its connection is dropped")
	fl.StringVar(&cfg.Path, "path", "/zkbench-pause", "the znode written")
	fl.IntVar(&cfg.DataSize, "data-size", 100, "bytes per write")
	fl.DurationVar(&duration, "duration", 0, "stop after this long (0: at SIGINT or SIGTERM)")
	fl.StringVar(&marks, "marks", "", "file of restart windows, read when the writer stops")
	fl.StringVar(&out, "out", "", "write the report to this file instead of stdout")
	return cmd
}
