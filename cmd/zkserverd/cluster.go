package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
)

// clusterFlags configure the local try-out cluster. size is --members;
// sizeAlias is its older spelling --size (see resolveMembers).
type clusterFlags struct {
	size       int
	sizeAlias  int
	dir        string
	clientPort int
	quorumPort int
	electPort  int
	adminPort  int
	tickTime   int
}

// newClusterCommand runs a whole ensemble on loopback in one process, for
// trying zkserverd out; production members run one per machine with zoo.cfg.
func newClusterCommand(stderr io.Writer) *cobra.Command {
	return clusterCommand(&clusterFlags{}, stderr)
}

// clusterCommand is the cluster command with its flags parsed into f.
func clusterCommand(f *clusterFlags, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a local N-member ensemble on 127.0.0.1 (for trying things out)",
		Long: "cluster starts an ensemble of --members members in this process, on 127.0.0.1:\n" +
			"member i listens for clients on --client-port+i-1, for raft on --quorum-port+i-1 and\n" +
			"for write forwarding on --election-port+i-1 and for the AdminServer on\n" +
			"--admin-port+i-1, with its data in --dir/i. --size is an alias of --members.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := resolveMembers(cmd, f); err != nil {
				return err
			}
			return runCluster(cmd, *f, stderr)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.size, "members", 3, "number of members (3 or 5 make sense)")
	fl.IntVar(&f.sizeAlias, "size", 3, "alias of --members")
	fl.StringVar(&f.dir, "dir", "cluster-data", "parent directory of the members' data directories")
	fl.IntVar(&f.clientPort, "client-port", 2181, "client port of member 1")
	fl.IntVar(&f.quorumPort, "quorum-port", 2888, "quorum (raft) port of member 1")
	fl.IntVar(&f.electPort, "election-port", 3888, "election (forwarding) port of member 1")
	fl.IntVar(&f.adminPort, "admin-port", 8080, "AdminServer port of member 1 (0: pick free ports)")
	fl.IntVar(&f.tickTime, "tick-time", 2000, "tickTime in ms")
	return cmd
}

// resolveMembers takes the member count from --size when only the alias
// was given, and refuses the two given with different values.
func resolveMembers(cmd *cobra.Command, f *clusterFlags) error {
	fl := cmd.Flags()
	switch {
	case !fl.Changed("size"):
	case !fl.Changed("members"):
		f.size = f.sizeAlias
	case f.size != f.sizeAlias:
		return fmt.Errorf("--members %d and --size %d disagree (--size is an alias of --members)", f.size, f.sizeAlias)
	}
	return nil
}

// clusterConfigs builds each member's configuration.
func clusterConfigs(f clusterFlags) []conf.Config {
	var lines []conf.Server
	for i := 0; i < f.size; i++ {
		lines = append(lines, conf.Server{ID: int64(i + 1), Host: "127.0.0.1", PeerPort: f.quorumPort + i,
			ElectionPort: f.electPort + i, ClientAddress: "127.0.0.1", ClientPort: f.clientPort + i})
	}
	cfgs := make([]conf.Config, f.size)
	for i := range cfgs {
		c := conf.Default()
		c.TickTime = f.tickTime
		c.DataDir = filepath.Join(f.dir, fmt.Sprint(i+1))
		c.DataLogDir = c.DataDir
		c.ClientPort = f.clientPort + i
		c.ClientPortAddress = "127.0.0.1"
		c.Servers = lines
		c.MyID = int64(i + 1)
		c.FourLetterWordWhitelist = []string{"*"}
		if f.adminPort != 0 {
			c.AdminServerPort = f.adminPort + i
		} else {
			c.AdminServerPort = 0
		}
		cfgs[i] = c
	}
	return cfgs
}

func runCluster(cmd *cobra.Command, f clusterFlags, stderr io.Writer) error {
	if f.size < 1 {
		return fmt.Errorf("--members must be at least 1")
	}
	logger, err := newLogger(stderr, "info", "text")
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var servers []*server.Server
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	var addrs []string
	for i, cfg := range clusterConfigs(f) {
		srv, err := server.New(server.Options{Config: cfg, Logger: logger.With("member", i+1), Operator: ops.New(ops.Options{})})
		if err != nil {
			return err
		}
		servers = append(servers, srv)
		if err := srv.Start(ctx); err != nil {
			return err
		}
		addrs = append(addrs, srv.Addr().String())
	}
	fmt.Fprintf(cmd.OutOrStdout(), "ensemble of %d running; connect string: %s\n", f.size, strings.Join(addrs, ","))
	<-ctx.Done()
	return nil
}
