package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/zkserverd/zkserverd/conf"
)

// Starting without leaving anything behind. ZooKeeper validates its whole
// configuration before it touches the disk; zkserverd's server.New creates
// the data directories and opens the replicated state in them, so a start
// that then fails (its client port is taken) would leave a new, empty data
// directory behind. run therefore checks, before server.New, everything
// that commonly fails afterwards (the ports this server binds), and if a
// start fails all the same, removes the data directories it created.

// listenAddrs returns the addresses this server binds that a taken port
// would stop it at, each with the configuration key that sets it: the
// client ports and, for an ensemble member, its quorum and election ports
// (bound as replication binds them: on the server line's host, or on
// every interface with quorumListenOnAllIPs). The AdminServer and metrics
// ports are left out: the server starts without them when they are taken.
func listenAddrs(cfg conf.Config) []portCheck {
	var out []portCheck
	if !cfg.NoClientPort {
		if _, port, _ := net.SplitHostPort(cfg.ClientAddr()); port != "0" {
			out = append(out, portCheck{key: "clientPort", addr: cfg.ClientAddr()})
		}
	}
	if cfg.SecureClientPort != 0 {
		out = append(out, portCheck{key: "secureClientPort", addr: cfg.SecureClientAddr()})
	}
	if self, ok := cfg.Self(); ok && cfg.Distributed() {
		host := self.Host
		if cfg.QuorumListenOnAllIPs {
			host = ""
		}
		key := "server." + strconv.FormatInt(self.ID, 10)
		out = append(out,
			portCheck{key: key, addr: net.JoinHostPort(host, strconv.Itoa(self.PeerPort))},
			portCheck{key: key, addr: net.JoinHostPort(host, strconv.Itoa(self.ElectionPort))})
	}
	return out
}

// portCheck is one address to bind, and the key that sets it.
type portCheck struct{ key, addr string }

// checkPorts binds and closes every address of listenAddrs and returns
// one error naming the key and the address of each that cannot be bound
// (in use, or not an address of this machine). source is the
// configuration file, if any, for the error text.
func checkPorts(cfg conf.Config, source string) error {
	var errs []error
	for _, c := range listenAddrs(cfg) {
		ln, err := net.Listen("tcp", c.addr)
		if err != nil {
			where := ""
			if source != "" {
				where = source + ": "
			}
			errs = append(errs, fmt.Errorf("conf: %s%s: cannot listen on %s: %w", where, c.key, c.addr, err))
			continue
		}
		ln.Close()
	}
	return errors.Join(errs...)
}

// newDirs returns, for each directory of dirs that does not exist, its
// outermost ancestor that does not exist either (what os.MkdirAll will
// create, and what removeNewDirs removes): deduplicated, in order.
func newDirs(dirs ...string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		top := ""
		for p := abs; ; p = filepath.Dir(p) {
			_, err := os.Lstat(p)
			if err == nil {
				break
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			top = p
			if filepath.Dir(p) == p {
				break
			}
		}
		if top != "" && !slices.Contains(out, top) {
			out = append(out, top)
		}
	}
	return out, nil
}

// removeNewDirs removes the directories newDirs found missing before the
// start, and returns the first error.
func removeNewDirs(dirs []string) error {
	var first error
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil && first == nil {
			first = err
		}
	}
	return first
}
