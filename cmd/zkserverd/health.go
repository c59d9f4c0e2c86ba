package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/server/ops"
)

// healthTimeout bounds the whole health check; the image's HEALTHCHECK
// allows 5 s.
const healthTimeout = 4 * time.Second

// newHealthcheckCommand checks the local server the way the Docker
// HEALTHCHECK and a rolling restart need: healthy means serving
// (healthcheck). It finds the server as the server finds its
// configuration (probeTarget).
func newHealthcheckCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if the server configured here is serving clients",
		Long: "healthcheck reads the configuration as the server does (--config, the ZOO_*\n" +
			"variables, or the defaults; --data-dir and --client-port override it), sends srvr\n" +
			"to the client port on this machine and opens and closes a session. It exits 0\n" +
			"and prints the mode when the server serves, and 1 otherwise.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addr, err := probeTarget(cmd, f)
			if err != nil {
				return err
			}
			mode, err := healthcheck(addr, healthTimeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving: %s\n", mode)
			return nil
		},
	}
	addConfigFlags(cmd, &f)
	return cmd
}

// newStatusCommand is zkServer.sh status: it names the configuration and
// the client port it checked and prints the server's Mode. It runs the
// health check, so a member that answers srvr but cannot create sessions
// is not serving either; then it prints the reason and exits 1.
func newStatusCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the Mode of the server configured here (as zkServer.sh status); exit 1 unless it serves",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addr, err := probeTarget(cmd, f)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.config != "" {
				fmt.Fprintf(out, "Using config: %s\n", f.config)
			}
			host, port, _ := net.SplitHostPort(addr)
			fmt.Fprintf(out, "Client port found: %s. Client address: %s.\n", port, host)
			mode, err := healthcheck(addr, healthTimeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Mode: %s\n", mode)
			return nil
		},
	}
	addConfigFlags(cmd, &f)
	return cmd
}

// probeTarget returns the address on this machine of the client port the
// configuration resolved from f (as the server resolves it) listens on.
func probeTarget(cmd *cobra.Command, f runFlags) (string, error) {
	cfg, err := loadConfig(cmd, f, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", err
	}
	switch {
	case cfg.NoClientPort:
		return "", errors.New("healthcheck: the server has only a TLS client port (secureClientPort); pass --client-port with a plaintext port to check")
	case cfg.ClientPort == 0 && !hasServerClientPort(cfg):
		return "", errors.New("healthcheck: clientPort is 0 (the server picks a free port at start); pass --client-port")
	}
	return localAddr(cfg.ClientAddr()), nil
}

// hasServerClientPort reports whether this member's server line gives
// the client port (server.N=...;port), which ClientAddr prefers.
func hasServerClientPort(cfg conf.Config) bool {
	s, ok := cfg.Self()
	return ok && s.ClientPort != 0
}

// healthcheck reports whether the server at addr serves clients, and its
// mode: srvr (always allowed) must report a serving mode, which a member
// without a quorum or a fenced one does not, and a real session must be
// created and closed (ops.ProbeSession), which a member that answers srvr
// but cannot commit does not. A session that was created but could not be
// closed (enforced SASL authentication refuses closeSession) still counts
// as serving.
func healthcheck(addr string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	mode, err := probeMode(addr, timeout)
	if err != nil {
		return "", err
	}
	_, err = ops.ProbeSession(addr, time.Until(deadline))
	if err != nil && !errors.Is(err, ops.ErrSessionNotClosed) {
		return "", fmt.Errorf("healthcheck: not serving: srvr says %s, but %w", mode, err)
	}
	return mode, nil
}

// localAddr turns a bind address into one to dial on this machine.
func localAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// probeMode sends srvr and returns the Mode line's value when the server
// is serving.
func probeMode(addr string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", fmt.Errorf("healthcheck: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return "", fmt.Errorf("healthcheck: %w", err)
	}
	out, err := io.ReadAll(c)
	if err != nil && len(out) == 0 {
		return "", fmt.Errorf("healthcheck: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			switch mode {
			case "standalone", "leader", "follower", "observer":
				return mode, nil
			}
			return "", fmt.Errorf("healthcheck: mode %q", mode)
		}
	}
	return "", errors.New("healthcheck: not serving: " + strings.TrimSpace(string(out)))
}

// newPrintConfigCommand prints the zoo.cfg the ZOO_* variables describe.
func newPrintConfigCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "print-config",
		Short: "Print the zoo.cfg that the ZOO_* environment variables describe",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			text, err := conf.RenderEnvConfig(os.Environ())
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), text)
			return nil
		},
	}
}
