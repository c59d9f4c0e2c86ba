package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
)

// runFlags are the root command's flags; healthcheck and status use the
// ones addConfigFlags defines.
type runFlags struct {
	config     string
	dataDir    string
	dataLogDir string
	clientPort int
	logLevel   string
	logFormat  string
	logOut     logOutputFlags
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
	// --version prints what the version command prints.
	root.Version = versionLine()
	root.SetVersionTemplate("{{.Version}}\n")
	addRunFlags(root, &f)
	addHandOffFlag(root) // transfer.go
	root.AddCommand(newVersionCommand(), newClusterCommand(stderr), newHealthcheckCommand(), newStatusCommand(), newPrintConfigCommand())
	root.AddCommand(newImportCommand(stderr))
	root.AddCommand(newBackupCommand(), newRestoreCommand())
	root.AddCommand(newTransferCommand())     // transfer.go
	root.AddCommand(newMirrorCommand(stderr)) // mirror.go
	root.AddCommand(newTakeoverCommand())     // takeover_cmd.go
	return root
}

// newVersionCommand prints versionLine, as the root's --version does.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the build date",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
		},
	}
}

// addRunFlags defines the server's flags.
func addRunFlags(cmd *cobra.Command, f *runFlags) {
	addConfigFlags(cmd, f)
	fl := cmd.Flags()
	fl.StringVar(&f.dataLogDir, "data-log-dir", "", "transaction log directory (overrides dataLogDir; default: the data directory)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level (debug, info, warn, error), then optional component=level pairs: info,raft=warn")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	addLogFlags(fl, &f.logOut)
	fl.BoolVar(&f.forceNewEnsemble, "force-new-ensemble", false, "an empty ensemble member bootstraps a new ensemble although some listed members do not answer (see docs/operations.md)")
	fl.StringVar(&f.pprofAddr, "pprof", "", "serve Go's pprof profiles on this address (e.g. 127.0.0.1:6060); off by default")
}

// addConfigFlags defines the flags that say which configuration to read
// and which client port it has: the server's, and the ones healthcheck and
// status take to find the server the same way.
func addConfigFlags(cmd *cobra.Command, f *runFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "zoo.cfg-style configuration file")
	fl.StringVar(&f.dataDir, "data-dir", "", "data directory (overrides dataDir; default ./data)")
	fl.IntVar(&f.clientPort, "client-port", 0, "client port (overrides clientPort; default 2181)")
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
		// --data-dir stands for the file's dataDir, also where myid is.
		dataDir := ""
		if cmd.Flags().Changed("data-dir") {
			dataDir = f.dataDir
		}
		loaded, warnings, err := conf.LoadWithDataDir(f.config, dataDir, sys...)
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
		if cfg.DataLogDir == cfg.DataDir {
			cfg.DataLogDir = "" // it followed dataDir: it still does
		}
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
	return cfg, validateSources(cmd, f, cfg)
}

// validateSources validates cfg and names in each problem the flag or the
// file that set the key.
func validateSources(cmd *cobra.Command, f runFlags, cfg conf.Config) error {
	err := cfg.Validate()
	for _, o := range []struct{ flag, key string }{
		{"data-dir", "dataDir"}, {"data-log-dir", "dataLogDir"}, {"client-port", "clientPort"},
	} {
		if fl := cmd.Flags().Lookup(o.flag); fl != nil && fl.Changed {
			err = conf.WithSource(err, "--"+o.flag, o.key)
		}
	}
	if f.config != "" {
		err = conf.WithSource(err, f.config)
	}
	return err
}

// run starts the server and blocks until SIGINT or SIGTERM; a leader then
// hands its leadership over before it stops (HandOffAndClose). Nothing is
// created on disk before the configuration is valid and its ports can be
// bound (startup.go); a start that fails all the same removes the data
// directories it created, when that is safe (startServer).
func run(cmd *cobra.Command, f runFlags, stderr io.Writer) error {
	out, closeLog, err := f.logOut.open(stderr, os.Getenv)
	if err != nil {
		return err
	}
	defer closeLog()
	logger, err := newLogger(out, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(cmd, f, logger)
	if err != nil {
		return err
	}
	if err := checkPorts(cfg, f.config); err != nil {
		return err
	}
	applyMemoryLimit(cfg, os.Getenv, os.DirFS("/"), logger) // memlimit.go
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.pprofAddr != "" {
		stopProfiles, err := serveProfiles(f.pprofAddr, logger)
		if err != nil {
			return err
		}
		defer stopProfiles()
	}
	srv, err := startServer(ctx, cfg, logger, nil)
	if err != nil {
		return err
	}
	sd := newNotifier(os.Getenv("NOTIFY_SOCKET"))
	notified := make(chan struct{})
	go func() { defer close(notified); notifyServing(ctx, sd, srv, time.Second, logger) }()
	<-ctx.Done()
	<-notified
	logger.Info("shutting down")
	if err := sd.send("STOPPING=1"); err != nil {
		logger.Warn("cannot tell systemd the server is stopping", "err", err)
	}
	if err := srv.HandOffAndClose(handOffTimeoutOf(cmd)); err != nil { // a leader hands over first (transfer.go)
		logger.Error("shutdown", "err", err)
		return err
	}
	logger.Info("stopped")
	return nil
}

// startServer creates and starts the server. When that fails, the data
// directories this start created (they did not exist before) are removed
// again, unless the server is an ensemble member that got as far as
// running raft: it may have voted or acknowledged entries by then, and
// forgetting a vote or an acknowledged entry could break the ensemble's
// guarantees, so that directory is kept and the log says so. clientLn, if
// not nil, is the client port, already open (server.Options.ClientListener).
func startServer(ctx context.Context, cfg conf.Config, logger *slog.Logger, clientLn net.Listener) (*server.Server, error) {
	created, err := newDirs(cfg.DataDir, cfg.EffectiveDataLogDir())
	if err != nil {
		return nil, err
	}
	cleanup := func() {
		if len(created) == 0 {
			return
		}
		if err := removeNewDirs(created); err != nil {
			logger.Warn("could not remove the data directories this failed start created", "dirs", created, "err", err)
			return
		}
		logger.Info("removed the data directories this failed start created", "dirs", created)
	}
	srv, err := server.New(server.Options{Config: cfg, Logger: logger, Operator: ops.New(ops.Options{}), ClientListener: clientLn})
	if err != nil {
		cleanup()
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		srv.Close()
		if cfg.Distributed() {
			if len(created) > 0 {
				logger.Warn("keeping the data directories this failed start created: the member may have taken part in the ensemble", "dirs", created)
			}
		} else {
			cleanup()
		}
		return nil, err
	}
	return srv, nil
}
