package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkserverd/zkserverd/internal/fourletter"
	"github.com/zkserverd/zkserverd/internal/procgroup"
	"github.com/zkserverd/zkserverd/test/ports"
)

// Server kinds.
const (
	kindZkserverd = "zkserverd"
	kindZooKeeper = "zookeeper"
)

// Debian's ZooKeeper jars; zookeeper.jar's manifest names its dependencies
// but not all of Netty's: nettyJars are the ones its TLS (the Netty
// connection factory and client socket) needs on top.
const (
	zookeeperJar = "/usr/share/java/zookeeper.jar"
	slf4jSimple  = "/usr/share/java/slf4j-simple.jar"
	nettyJars    = "/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar"
)

// containerCheckMs is the container/TTL reaper interval for both servers,
// short so the reaping scenarios finish quickly.
const containerCheckMs = 1000

// server is one running server process on a loopback port.
type server struct {
	kind       string
	addr       string // the plaintext client port
	secureAddr string // the TLS-only port of a secured server, else ""
	proc       *procgroup.Process
}

// zooCfg is the configuration both servers get: standalone, tickTime 2000,
// every four-letter word, TTL nodes enabled, no AdminServer.
func zooCfg(dataDir string, port int) string {
	return strings.Join([]string{
		"tickTime=2000",
		"dataDir=" + dataDir,
		fmt.Sprintf("clientPort=%d", port),
		"clientPortAddress=127.0.0.1",
		"4lw.commands.whitelist=*",
		"extendedTypesEnabled=true",
		"admin.enableServer=false",
		fmt.Sprintf("znode.container.checkIntervalMs=%d", containerCheckMs),
		// The sasl ACL scheme (java/sasl); ZooKeeper turns this key into
		// the system property zookeeper.authProvider.1.
		"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
		"",
	}, "\n")
}

// serverJAAS is the JAAS file of the standalone servers: the DIGEST-MD5
// users of the java/sasl scenario.
const serverJAAS = `Server {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  user_super="adminsecret"
  user_bob="bobsecret";
};
`

// writeJAAS writes serverJAAS under home and returns how each kind of
// server is told about it: a zoo.cfg line for zkserverd, a -D property for
// ZooKeeper (which reads it only as a JVM property).
func writeJAAS(home string) (cfgLine, jvmProp string, err error) {
	path := filepath.Join(home, "jaas.conf")
	if err := os.WriteFile(path, []byte(serverJAAS), 0o644); err != nil {
		return "", "", fmt.Errorf("write JAAS file: %w", err)
	}
	return "java.security.auth.login.config=" + path + "\n", "-Djava.security.auth.login.config=" + path, nil
}

// startServer writes a zoo.cfg under dir/serverKey(kind, f), starts the
// server and waits until it answers ruok. The secured server (f is
// securedServer, with its key material sec) also serves a TLS-only port,
// see keys.secureCfg and keys.serverJVMProps; the one without a SASL login
// (noSASLServer) gets no JAAS file.
func startServer(ctx context.Context, kind, dir, zkserverdBin string, f flavour, sec keys, pick *ports.Picker) (*server, error) {
	home := filepath.Join(dir, serverKey(kind, f))
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	port, err := pick.Pick()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	text := zooCfg(filepath.Join(home, "data"), port)
	var jaasProps, props []string // ZooKeeper's -D properties; props go to zkserverd's SERVER_JVMFLAGS too
	if f != noSASLServer {
		jaasLine, jaasProp, err := writeJAAS(home)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", kind, err)
		}
		text += jaasLine
		jaasProps = []string{jaasProp}
	}
	s := &server{kind: kind, addr: fmt.Sprintf("127.0.0.1:%d", port)}
	if f == securedServer {
		securePort, err := pick.Pick()
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", kind, err)
		}
		s.secureAddr = fmt.Sprintf("127.0.0.1:%d", securePort)
		text += sec.secureCfg(securePort)
		props = sec.serverJVMProps()
	}
	cfg := filepath.Join(home, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	argv, err := serverArgv(kind, zkserverdBin, cfg, false, append(jaasProps, props...)...)
	if err != nil {
		return nil, err
	}
	if s.proc, err = procgroup.Start(argv, procgroup.Options{Dir: home, Env: serverEnv(kind, props), Log: filepath.Join(home, "server.log")}); err != nil {
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	if err := waitFor(ctx, s.proc, 60*time.Second, "answer ruok", func() bool {
		out, err := fourletter.Ask(s.addr, "ruok")
		return err == nil && out == "imok" && (s.secureAddr == "" || listening(s.secureAddr))
	}); err != nil {
		s.proc.Stop(stopGrace)
		return nil, fmt.Errorf("start %s: %w (log: %s)", kind, err, s.proc.Log())
	}
	return s, nil
}

// serverEnv is the environment through which zkserverd gets the -D
// properties props, as zkServer.sh passes them: SERVER_JVMFLAGS. ZooKeeper
// gets them on its command line (serverArgv).
func serverEnv(kind string, props []string) []string {
	if kind != kindZkserverd || len(props) == 0 {
		return nil
	}
	return []string{"SERVER_JVMFLAGS=" + strings.Join(props, " ")}
}

// listening reports whether addr accepts TCP connections.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// serverArgv is the command line of a server of the given kind reading
// cfg: for ZooKeeper, ZooKeeperServerMain standalone or QuorumPeerMain for
// an ensemble member (member), with the extra -D system properties
// jvmProps (zkserverd reads the same settings from zoo.cfg).
func serverArgv(kind, zkserverdBin, cfg string, member bool, jvmProps ...string) ([]string, error) {
	switch kind {
	case kindZkserverd:
		return []string{zkserverdBin, "--config", cfg}, nil
	case kindZooKeeper:
		// ZooKeeper reads the reaper interval only as a JVM property: in
		// zoo.cfg it would become zookeeper.znode.container.checkIntervalMs.
		argv := []string{"java", "-Xmx512m",
			fmt.Sprintf("-Dznode.container.checkIntervalMs=%d", containerCheckMs)}
		argv = append(argv, jvmProps...)
		main := "org.apache.zookeeper.server.ZooKeeperServerMain"
		if member {
			main = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
		}
		return append(argv, "-cp", zookeeperJar+":"+nettyJars+":"+slf4jSimple, main, cfg), nil
	default:
		return nil, fmt.Errorf("start: unknown server kind %q", kind)
	}
}

// waitFor polls cond every 100 ms until it holds; it fails when p
// exits, ctx ends or limit passes. what names the condition.
func waitFor(ctx context.Context, p *procgroup.Process, limit time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("exited before it would %s", what)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("did not %s within %v", what, limit)
		}
	}
}

// stopGrace is how long a server process gets to exit after SIGTERM
// before it is killed.
const stopGrace = 5 * time.Second
