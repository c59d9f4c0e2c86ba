package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
)

// runFlags are the root command's flags.
type runFlags struct {
	config     string
	dataDir    string
	dataLogDir string
	clientPort int
	logLevel   string
	logFormat  string
	pprofAddr  string
	// forceNewEnsemble: see conf.Config.ForceNewEnsemble.
	forceNewEnsemble bool
}

// newRootCommand builds the command tree; nothing is global.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	root := &cobra.Command{
		Use:   "zkserverd",
		Short: "A ZooKeeper-compatible coordination server",
		Long: "zkserverd serves the ZooKeeper client protocol (3.8/3.9). Without flags it runs a\n" +
			"standalone server on port 2181 with its data in ./data.",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, f, stderr)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	fl := root.Flags()
	fl.StringVar(&f.config, "config", "", "zoo.cfg-style configuration file")
	fl.StringVar(&f.dataDir, "data-dir", "", "data directory (overrides dataDir; default ./data)")
	fl.StringVar(&f.dataLogDir, "data-log-dir", "", "transaction log directory (overrides dataLogDir; default: the data directory)")
	fl.IntVar(&f.clientPort, "client-port", 0, "client port (overrides clientPort; default 2181)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fl.BoolVar(&f.forceNewEnsemble, "force-new-ensemble", false, "an empty ensemble member bootstraps a new ensemble although some listed members do not answer (see docs/operations.md)")
	fl.StringVar(&f.pprofAddr, "pprof", "", "serve Go's pprof profiles on this address (e.g. 127.0.0.1:6060); off by default")
	root.AddCommand(newVersionCommand(), newClusterCommand(stderr), newHealthcheckCommand(&f), newPrintConfigCommand())
	root.AddCommand(newImportCommand(stderr))
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "zkserverd %s, built on %s (%s)\n", server.Version, server.BuildDate, runtime.Version())
		},
	}
}

// loadConfig resolves the configuration: the file if given, else the
// standalone defaults, then the flags that were set.
func loadConfig(cmd *cobra.Command, f runFlags, logger *slog.Logger) (conf.Config, error) {
	cfg := conf.Default()
	// -D properties of SERVER_JVMFLAGS and JVMFLAGS, as zkServer.sh passes
	// them; the configuration file wins where both set a key.
	sys, notes := conf.SystemProperties(os.Environ())
	for _, n := range notes {
		logger.Info("configuration", "note", n)
	}
	switch {
	case f.config != "":
		loaded, warnings, err := conf.Load(f.config, sys...)
		if err != nil {
			return cfg, err
		}
		for _, w := range warnings {
			logger.Warn("configuration", "warning", w, "file", f.config)
		}
		cfg = loaded
	case conf.EnvPresent(os.Environ()):
		// The official ZooKeeper image's ZOO_* variables (Docker).
		loaded, warnings, err := conf.LoadEnv(os.Environ())
		if err != nil {
			return cfg, err
		}
		for _, w := range warnings {
			logger.Warn("configuration", "warning", w, "source", "environment")
		}
		cfg = loaded
	case len(sys) > 0:
		loaded, warnings, err := conf.Parse(strings.NewReader(""), sys...)
		if err != nil {
			return cfg, err
		}
		for _, w := range warnings {
			logger.Warn("configuration", "warning", w, "source", "JVM flags")
		}
		cfg = loaded
	}
	if cmd.Flags().Changed("data-dir") {
		cfg.DataDir = f.dataDir
	}
	if cmd.Flags().Changed("data-log-dir") {
		cfg.DataLogDir = f.dataLogDir
	}
	if cmd.Flags().Changed("client-port") {
		cfg.ClientPort = f.clientPort
	}
	if f.forceNewEnsemble {
		cfg.ForceNewEnsemble = true
	}
	if cfg.DataLogDir == "" {
		cfg.DataLogDir = cfg.DataDir
	}
	return cfg, cfg.Validate()
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is neither text nor json", format)
}

// run starts the server and blocks until SIGINT or SIGTERM.
func run(cmd *cobra.Command, f runFlags, stderr io.Writer) error {
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(cmd, f, logger)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.pprofAddr != "" {
		stopProfiles, err := serveProfiles(f.pprofAddr, logger)
		if err != nil {
			return err
		}
		defer stopProfiles()
	}
	srv, err := server.New(server.Options{Config: cfg, Logger: logger, Operator: ops.New(ops.Options{})})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		srv.Close()
		return err
	}
	<-ctx.Done()
	logger.Info("shutting down")
	if err := srv.Close(); err != nil {
		logger.Error("shutdown", "err", err)
		return err
	}
	logger.Info("stopped")
	return nil
}
