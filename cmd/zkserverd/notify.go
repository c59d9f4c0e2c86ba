package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"
)

// systemd readiness (sd_notify). A service of Type=notify tells systemd it
// has started by sending "READY=1" in a datagram to the unix socket named
// by $NOTIFY_SOCKET (a path, or an abstract socket when it starts with
// '@'); "STATUS=..." sets the line `systemctl status` shows, and
// "STOPPING=1" says the service is stopping. This is the whole protocol
// zkserverd uses, so it needs no library: see the sd_notify(3) manual.

// notifier sends sd_notify messages; nil when $NOTIFY_SOCKET is unset.
type notifier struct {
	addr *net.UnixAddr
}

// newNotifier returns a notifier for the socket named socket, or nil for
// "" (not started by systemd, or by a unit without Type=notify).
func newNotifier(socket string) *notifier {
	if socket == "" {
		return nil
	}
	name := socket
	if strings.HasPrefix(name, "@") {
		name = "\x00" + name[1:] // an abstract socket
	}
	return &notifier{addr: &net.UnixAddr{Name: name, Net: "unixgram"}}
}

// send sends one message (newline-separated assignments).
func (n *notifier) send(msg string) error {
	if n == nil {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(msg)); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}

// servingState is what notifyServing needs of the server.
type servingState interface {
	Serving() bool
	Mode() string
}

// notifyServing reports the server's state to systemd until ctx is done:
// READY=1 the first time the server serves (a standalone server once it
// has started, an ensemble member once it has a quorum and has caught up),
// and a STATUS line whenever serving starts or stops. It checks every
// interval. Failures to send are logged once.
func notifyServing(ctx context.Context, n *notifier, s servingState, interval time.Duration, logger *slog.Logger) {
	if n == nil {
		return
	}
	ready, last, failed := false, "", false
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		serving := s.Serving()
		status := "STATUS=not serving: no quorum, or catching up, or fenced"
		if serving {
			status = "STATUS=serving as " + s.Mode()
		}
		if status != last {
			msg := status
			if !ready && serving {
				msg = "READY=1\n" + status
				ready = true
			}
			if err := n.send(msg); err != nil && !failed {
				logger.Warn("cannot tell systemd the server's state", "err", err)
				failed = true
			}
			last = status
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
