package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Server kinds.
const (
	kindZkserverd = "zkserverd"
	kindZooKeeper = "zookeeper"
)

// Debian's ZooKeeper jars; zookeeper.jar's manifest names its dependencies.
const (
	zookeeperJar = "/usr/share/java/zookeeper.jar"
	slf4jSimple  = "/usr/share/java/slf4j-simple.jar"
)

// containerCheckMs is the container/TTL reaper interval for both servers,
// short so the reaping scenarios finish quickly.
const containerCheckMs = 1000

// server is one running server process on a loopback port.
type server struct {
	kind string
	addr string
	log  string // path of its combined stdout/stderr
	cmd  *exec.Cmd
	done chan struct{}
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
		"",
	}, "\n")
}

// startServer writes a zoo.cfg under dir/kind, starts the server and waits
// until it answers ruok.
func startServer(ctx context.Context, kind, dir, zkserverdBin string) (*server, error) {
	home := filepath.Join(dir, kind)
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	cfg := filepath.Join(home, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(zooCfg(filepath.Join(home, "data"), port)), 0o644); err != nil {
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	var argv []string
	switch kind {
	case kindZkserverd:
		argv = []string{zkserverdBin, "--config", cfg}
	case kindZooKeeper:
		// ZooKeeper reads the reaper interval only as a JVM property: in
		// zoo.cfg it would become zookeeper.znode.container.checkIntervalMs.
		argv = []string{"java", "-Xmx512m",
			fmt.Sprintf("-Dznode.container.checkIntervalMs=%d", containerCheckMs),
			"-cp", zookeeperJar + ":" + slf4jSimple,
			"org.apache.zookeeper.server.ZooKeeperServerMain", cfg}
	default:
		return nil, fmt.Errorf("start: unknown server kind %q", kind)
	}
	s := &server{kind: kind, addr: fmt.Sprintf("127.0.0.1:%d", port), log: filepath.Join(home, "server.log"), done: make(chan struct{})}
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Dir = home
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", kind, err)
	}
	go func() {
		s.cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("start %s: %w (log: %s)", kind, err, s.log)
	}
	return s, nil
}

// waitReady polls ruok until the server answers imok.
func (s *server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if out, err := fourLetter(s.addr, "ruok"); err == nil && out == "imok" {
			return nil
		}
		select {
		case <-s.done:
			return errors.New("exited before answering ruok")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no imok within %v", limit)
		}
	}
}

// stop terminates the server's process group: SIGTERM, then SIGKILL after
// five seconds.
func (s *server) stop() {
	pgid := s.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.done
	}
}

// fourLetter sends a four-letter word and returns the whole reply.
func fourLetter(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String(), nil
		}
	}
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
