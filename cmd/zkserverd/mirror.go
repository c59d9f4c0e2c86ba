package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/mirror"
	"github.com/zkserverd/zkserverd/zab"
)

// mirrorFlags are the mirror command's flags.
type mirrorFlags struct {
	ensemble   string // the ZooKeeper ensemble's zoo.cfg (or dynamic file)
	myid       int64
	statusAddr string
	clientAddr string // serve ZooKeeper clients here (mirror_serve.go); "" = none
	logLevel   string
	logFormat  string
	// takeoverConfig is the zkserverd configuration this mirror becomes
	// a member of at the takeover (takeover.go).
	takeoverConfig string
}

// newMirrorCommand builds `zkserverd mirror`: follow a running Apache
// ZooKeeper ensemble as a Zab observer and keep its state (tree, sessions,
// zxid) in a zkserverd replica (zab/, mirror/).
func newMirrorCommand(stderr io.Writer) *cobra.Command {
	var f mirrorFlags
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Follow a running Apache ZooKeeper ensemble as an observer",
		Long: "mirror joins a running Apache ZooKeeper 3.5-3.9 ensemble as an observer (its\n" +
			"server.N line, role observer, must be in the ensemble's configuration) and keeps\n" +
			"a replica of the ensemble's tree, sessions and zxid, checked against ZooKeeper's\n" +
			"digest at every transaction. --status-addr serves GET /mirror (JSON) and /ready.\n" +
			"With --client-addr it also serves ZooKeeper clients there, as an observer does:\n" +
			"reads from its replica, writes and sessions through the ZooKeeper leader.\n" +
			"It stops with an error when its state diverges from the ensemble's.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runMirror(ctx, f, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.ensemble, "ensemble", "", "the ZooKeeper ensemble's zoo.cfg (server.N lines; its dynamicConfigFile is read too)")
	fl.Int64Var(&f.myid, "myid", 0, "this mirror's sid: the N of its server.N=...:observer line")
	fl.StringVar(&f.statusAddr, "status-addr", "127.0.0.1:8080", "address of the status endpoint (empty: none)")
	fl.StringVar(&f.clientAddr, "client-addr", "", "serve ZooKeeper clients on this host:port as a ZooKeeper observer does (empty: none)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fl.StringVar(&f.takeoverConfig, "takeover-config", "", "the zkserverd zoo.cfg this mirror runs as a member after a takeover (server.N lines of the mirrors, an empty dataDir); see zkserverd takeover --help")
	cmd.MarkFlagRequired("ensemble")
	cmd.MarkFlagRequired("myid")
	return cmd
}

// runMirror follows the ensemble until ctx ends or the mirror stops.
func runMirror(ctx context.Context, f mirrorFlags, stderr io.Writer) error {
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	view, err := readEnsembleView(f.ensemble)
	if err != nil {
		return err
	}
	if f.takeoverConfig != "" {
		if err := checkTakeoverConfig(f.takeoverConfig, f.myid); err != nil { // takeover_member.go
			return err
		}
	}
	var (
		st  *mirror.State
		obs *zab.Observer
		tko = takeoverOptions{myid: f.myid, configPath: f.takeoverConfig, view: view, logger: logger}
	)
	if f.clientAddr != "" {
		served, err := startMirrorServer(ctx, f, view, logger)
		if err != nil {
			return err
		}
		defer served.Close()
		st, obs = served.replica.State(), served.obs
		tko.freezer, tko.stopClients, tko.clientPort = served, served.StopServing, served.clientLn
	} else {
		sec, err := readMirrorSecurity(f.ensemble, logger) // quorum TLS and SASL (mirror_security.go)
		if err != nil {
			return err
		}
		st = mirror.New(mirror.Options{Logger: logger.With("component", "mirror")})
		zcfg := zab.Config{MyID: f.myid, Servers: view.Servers, Handler: st, Logger: logger.With("component", "zab")}
		sec.apply(&zcfg)
		obs, err = zab.Start(zcfg)
		if err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		defer obs.Close()
	}
	tko.st, tko.obs = st, obs
	tk := newTakeover(tko)
	if f.statusAddr != "" {
		srv, err := serveMirrorStatus(f.statusAddr, f.myid, st, obs, tk, logger)
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	logger.Info("mirroring", "myid", f.myid, "voters", len(view.Voters()), "status", f.statusAddr, "clients", f.clientAddr)
	select {
	case <-ctx.Done():
	case <-obs.Done():
	}
	if tk.switched() {
		return tk.serveUntil(ctx) // the mirror became a zkserverd member (takeover.go)
	}
	if ctx.Err() != nil {
		logger.Info("mirror stopping", "last_zxid", fmt.Sprintf("%#x", st.LastZxid()))
		return nil
	}
	err = errors.Join(obs.Err(), st.Err())
	if err == nil {
		err = errors.New("the observer stopped")
	}
	logger.Error("mirror stopped: its state no longer follows the ensemble", "err", err)
	return fmt.Errorf("mirror: %w", err)
}

// readEnsembleView reads the ensemble's membership from its zoo.cfg: the
// server.N lines of the file and of its dynamicConfigFile, if it names
// one (relative to the file's directory when not absolute).
func readEnsembleView(path string) (zab.View, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return zab.View{}, fmt.Errorf("mirror: read the ensemble's configuration: %w", err)
	}
	text := string(b)
	if dyn := configValue(text, "dynamicConfigFile"); dyn != "" {
		if !filepath.IsAbs(dyn) {
			dyn = filepath.Join(filepath.Dir(path), dyn)
		}
		d, err := os.ReadFile(dyn)
		if err != nil {
			return zab.View{}, fmt.Errorf("mirror: read the ensemble's dynamic configuration: %w", err)
		}
		text += "\n" + string(d)
	}
	view, err := zab.ParseView(text)
	if err != nil {
		return zab.View{}, fmt.Errorf("mirror: %s: %w", path, err)
	}
	if len(view.Voters()) == 0 {
		return zab.View{}, fmt.Errorf("mirror: %s lists no participant (server.N lines)", path)
	}
	return view, nil
}

// configValue returns the value of key in a zoo.cfg text ("" if absent).
func configValue(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// mirrorStatus is GET /mirror's body.
type mirrorStatus struct {
	takeoverStatus // phase, zookeeper_reachable... (takeover_status.go)

	MyID     int64  `json:"myid"`
	Leader   int64  `json:"leader"` // 0: not synced with a leader
	Synced   bool   `json:"synced"`
	LastZxid string `json:"last_zxid"`
	Znodes   int    `json:"znodes"`
	Sessions int    `json:"sessions"`
	Digest   int64  `json:"digest"`
	Syncs    int64  `json:"syncs"`
	Txns     int64  `json:"txns"`
	Error    string `json:"error,omitempty"`
}

func statusOf(myid int64, st *mirror.State, obs *zab.Observer) mirrorStatus {
	leader, _ := obs.Leader()
	stats := obs.Stats()
	s := mirrorStatus{
		MyID: myid, Leader: leader, Synced: st.Synced() && leader != 0,
		LastZxid: fmt.Sprintf("%#x", st.LastZxid()), Znodes: st.Tree().NodeCount(),
		Sessions: st.Sessions().Len(), Digest: st.Digest(), Syncs: stats.Syncs, Txns: stats.Txns,
	}
	if err := errors.Join(obs.Err(), st.Err()); err != nil {
		s.Error, s.Synced = err.Error(), false
	}
	return s
}

// serveMirrorStatus serves GET /mirror and /ready (200 while synced with
// a leader and not diverged, 503 otherwise) on addr.
func serveMirrorStatus(addr string, myid int64, st *mirror.State, obs *zab.Observer, tk *takeover, logger *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mirror: status endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /mirror", func(w http.ResponseWriter, r *http.Request) {
		s := statusOf(myid, st, obs)
		s.takeoverStatus = tk.status(r.Context())
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s)
	})
	tk.routes(mux) // takeover_status.go
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if ready, decided := tk.ready(); decided {
			if !ready {
				http.Error(w, "taking over: not serving yet", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ready")
			return
		}
		if s := statusOf(myid, st, obs); !s.Synced {
			http.Error(w, "not synced with the ensemble's leader", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("mirror status endpoint stopped", "err", err)
		}
	}()
	return srv, nil
}
