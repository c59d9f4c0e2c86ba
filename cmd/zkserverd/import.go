package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/internal/zkimport"
)

// importFlags are the import subcommand's flags.
type importFlags struct {
	from, fromLog, to, toLog string
}

// newImportCommand builds `zkserverd import`: migrate an Apache ZooKeeper
// data directory into a new zkserverd one. Progress goes to stderr, the
// summary to stdout.
func newImportCommand(stderr io.Writer) *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import --from <zookeeper dataDir> --to <zkserverd dataDir>",
		Short: "Migrate an Apache ZooKeeper data directory into a new zkserverd data directory",
		Long: "import reads ZooKeeper's newest valid snapshot and the transaction logs after it\n" +
			"(stop ZooKeeper first), and writes a zkserverd data directory with every znode,\n" +
			"its data, ACL and stat. Sessions are not migrated, so ephemeral znodes are dropped.\n" +
			"The target directory must be missing or empty.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runImport(cmd.OutOrStdout(), stderr, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "ZooKeeper dataDir (holding version-2/snapshot.*)")
	fl.StringVar(&f.fromLog, "from-log", "", "ZooKeeper dataLogDir (holding version-2/log.*; default: --from)")
	fl.StringVar(&f.to, "to", "", "zkserverd data directory to create (must be missing or empty)")
	fl.StringVar(&f.toLog, "to-log", "", "zkserverd data log directory to create (default: --to)")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func runImport(stdout, stderr io.Writer, f importFlags) error {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sum, err := zkimport.Import(zkimport.Options{
		From: f.from, FromLog: f.fromLog, To: f.to, ToLog: f.toLog,
		Progress: stderr, Logger: logger,
	})
	if err != nil {
		return err
	}
	snap := sum.Snapshot
	if snap == "" {
		snap = "none (replayed from an empty tree)"
	}
	fmt.Fprintf(stdout, "imported %d znodes, last zxid 0x%x\n", sum.Nodes, sum.LastZxid)
	fmt.Fprintf(stdout, "  snapshot:           %s (zxid 0x%x)\n", snap, sum.SnapshotZxid)
	fmt.Fprintf(stdout, "  transactions:       %d replayed from %d log file(s)\n", sum.Txns, sum.LogFiles)
	fmt.Fprintf(stdout, "  sessions dropped:   %d\n", sum.SessionsDropped)
	fmt.Fprintf(stdout, "  ephemerals dropped: %d\n", sum.EphemeralsDropped)
	fmt.Fprintf(stdout, "  bytes read:         %d\n", sum.BytesRead)
	fmt.Fprintf(stdout, "  bytes written:      %d\n", sum.BytesWritten)
	return nil
}
