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
)

// newHealthcheckCommand checks the local server the way the Docker
// HEALTHCHECK needs: srvr (always allowed) must report a serving mode.
func newHealthcheckCommand(f *runFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if the server configured here is serving clients",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd, *f, slog.New(slog.DiscardHandler))
			if err != nil {
				return err
			}
			mode, err := probeMode(localAddr(cfg.ClientAddr()), 3*time.Second)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "serving: %s\n", mode)
			return nil
		},
	}
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
