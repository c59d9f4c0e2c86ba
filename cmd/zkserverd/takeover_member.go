package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/mirror"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/server"
)

// The takeover member: the zkserverd ensemble member a mirror becomes. Its
// configuration (--takeover-config) is a zkserverd zoo.cfg whose server.N
// lines are the mirrors' (N = the mirror's --myid) and whose dataDir is
// empty until the switch. The member is run by the code that runs
// `zkserverd --config FILE` (loadConfig, checkPorts, startServer); the
// switch only adds the myid file and, on the seeding mirror, the seeded
// state in the layout the server opens (DATADIR/version-2, as `zkserverd
// import` writes it for "Seeding and growing an ensemble" (a)).

// checkTakeoverConfig checks the takeover configuration when the mirror
// starts, long before the switch: it parses and validates as the server
// will (with this mirror's myid), sets dataDir, lists this mirror's server
// line when it lists any, and its data directories hold no state.
func checkTakeoverConfig(path string, myid int64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("takeover: read --takeover-config: %w", err)
	}
	text := string(b)
	if configValue(text, "dataDir") == "" {
		return fmt.Errorf("takeover: %s sets no dataDir", path)
	}
	sys, _ := conf.SystemProperties(os.Environ())
	cfg, _, err := conf.Parse(strings.NewReader(text), sys...)
	if err != nil {
		return conf.WithSource(err, path)
	}
	cfg.MyID = myid
	if err := cfg.Validate(); err != nil {
		return conf.WithSource(err, path)
	}
	if _, ok := cfg.Self(); len(cfg.Servers) > 0 && !ok {
		return fmt.Errorf("takeover: %s lists no server.%d line (this mirror's --myid)", path, myid)
	}
	for _, dir := range []string{cfg.DataDir, cfg.EffectiveDataLogDir()} {
		if err := checkEmptyTakeoverDir(dir, myid); err != nil {
			return err
		}
	}
	return nil
}

// checkEmptyTakeoverDir accepts a data directory that is missing, or
// empty but for a myid file naming this mirror.
func checkEmptyTakeoverDir(dir string, myid int64) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("takeover: data directory: %w", err)
	}
	for _, e := range entries {
		if e.Name() == "myid" {
			if id, err := conf.LoadMyID(dir); err != nil || id != myid {
				return fmt.Errorf("takeover: %s names another server than this mirror (%d)", filepath.Join(dir, "myid"), myid)
			}
			continue
		}
		return fmt.Errorf("takeover: the takeover data directory %s must be empty until the switch; it holds %s", dir, e.Name())
	}
	return nil
}

// writeMyID writes dataDir/myid for the member (an existing one was
// checked by checkEmptyTakeoverDir).
func writeMyID(configPath string, myid int64) error {
	b, err := os.ReadFile(configPath)
	if err != nil {
		return fmt.Errorf("takeover: read --takeover-config: %w", err)
	}
	dir := configValue(string(b), "dataDir")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("takeover: create the data directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "myid"), []byte(strconv.FormatInt(myid, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("takeover: write myid: %w", err)
	}
	return nil
}

// seedInput is the mirrored state as the member's first state: the tree
// (with /zookeeper/config emptied: it held ZooKeeper's membership, and
// the member's leader writes its own server lines there, as for an
// import), the sessions and ZooKeeper's last zxid. The tree is handed
// over: the mirror must no longer change it.
func seedInput(st *mirror.State) replication.SeedInput {
	tree := st.Tree()
	tree.SetConfigNode(nil, 0, 0)
	return replication.SeedInput{Tree: tree, Sessions: st.Sessions(), LastZxid: st.LastZxid()}
}

// startTakeoverMember runs the member from the takeover configuration,
// as `zkserverd --config path` runs a server: it writes myid, loads and
// validates the configuration (loadConfig), checks its ports, then checks
// the data directories are still empty and, when seed is set, seeds them
// with its state for this member (replication.SeedState), and starts the
// server (startServer). An ensemble member returns at once; WaitServing
// tells when it serves.
func startTakeoverMember(ctx context.Context, path string, myid int64, seed *replication.SeedInput, port *handoffListener, logger *slog.Logger) (*server.Server, error) {
	if err := writeMyID(path, myid); err != nil {
		return nil, err
	}
	cmd := &cobra.Command{}
	f := runFlags{}
	addRunFlags(cmd, &f)
	f.config = path
	cfg, err := loadConfig(cmd, f, logger)
	if err != nil {
		return nil, err
	}
	lent := takeClientPort(cfg, port)
	checked := cfg
	checked.NoClientPort = checked.NoClientPort || lent != nil // open already
	if err := checkPorts(checked, path); err != nil {
		return nil, err
	}
	for _, dir := range []string{cfg.DataDir, cfg.EffectiveDataLogDir()} {
		if err := checkEmptyTakeoverDir(dir, myid); err != nil {
			return nil, err
		}
	}
	if seed != nil {
		size, err := replication.SeedState(replication.Config{
			ServerID:       max(cfg.MyID, 1), // as server.New names its member
			DataDir:        filepath.Join(cfg.DataDir, "version-2"),
			LogDir:         filepath.Join(cfg.EffectiveDataLogDir(), "version-2"),
			LogStore:       cfg.LogStore,
			WALSegmentSize: cfg.WALSegmentSizeBytes,
			ForceSync:      cfg.ForceSync,
			Tree:           datatree.Config{ExtendedTypesEnabled: cfg.ExtendedTypesEnabled},
			Logger:         logger.With("component", "seed"),
		}, *seed)
		if err != nil {
			return nil, fmt.Errorf("takeover: seed %s: %w", cfg.DataDir, err)
		}
		sessions := 0
		if seed.Sessions != nil {
			sessions = seed.Sessions.Len()
		}
		logger.Info("seeded the takeover data directory", "dir", cfg.DataDir, "znodes", seed.Tree.NodeCount(),
			"sessions", sessions, "last_zxid", zxidHex(seed.LastZxid), "snapshot_bytes", size)
	}
	applyMemoryLimit(cfg, os.Getenv, os.DirFS("/"), logger) // memlimit.go, as run does
	return startServer(ctx, cfg, logger, lent)
}

// takeClientPort returns a lease of the mirror's client port (nil: none)
// when the member is configured to listen on that address, so that
// clients who connect during the switch wait for the member instead of
// being refused; otherwise it closes the port, which the member may need
// (another address on the same port).
func takeClientPort(cfg conf.Config, port *handoffListener) net.Listener {
	if port == nil {
		return nil
	}
	if !cfg.NoClientPort && port.listensOn(cfg.ClientAddr()) {
		return port.lend()
	}
	port.Close()
	return nil
}
