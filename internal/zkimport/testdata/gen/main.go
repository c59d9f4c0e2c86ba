// Command gen produces zkimport's golden test data from a real Apache
// ZooKeeper 3.8 server: it starts one (Debian's jars), builds a varied tree
// through go-zookeeper, dumps every node as the server reports it, then kills
// the server with SIGKILL while sessions are still open, so the data
// directory holds live sessions and their ephemerals.
//
//	go run ./internal/zkimport/testdata/gen -out internal/zkimport/testdata/zk38
package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// goldenNode is one znode as a client saw it.
type goldenNode struct {
	Path string   `json:"path"`
	Data *string  `json:"data"` // base64; null for a null buffer
	ACL  []zk.ACL `json:"acl"`
	Stat zk.Stat  `json:"stat"`
	Kind string   `json:"kind"` // persistent, ephemeral, container, ttl
}

func main() {
	out := flag.String("out", "internal/zkimport/testdata/zk38", "output directory")
	flag.Parse()
	if err := run(*out); err != nil {
		log.Fatal(err)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func run(out string) error {
	work, err := os.MkdirTemp("", "zkgen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	port, err := freePort()
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s/data\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n", work, port)
	if err := os.WriteFile(filepath.Join(work, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return err
	}
	jars := []string{"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "netty-all.jar", "commons-cli.jar", "commons-io.jar", "metrics-core.jar", "snappy-java.jar"}
	for i, j := range jars {
		jars[i] = "/usr/share/java/" + j
	}
	cmd := exec.Command("java", "-Xmx128m",
		"-Dzookeeper.extendedTypesEnabled=true",
		"-Dzookeeper.snapCount=24",
		"-Dzookeeper.preAllocSize=4",
		"-Dznode.container.checkIntervalMs=3600000",
		"-cp", strings.Join(jars, ":"),
		"org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(work, "zoo.cfg"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	a, err := connect(addr)
	if err != nil {
		return err
	}
	b, err := connect(addr)
	if err != nil {
		return err
	}
	if err := build(addr, a, b); err != nil {
		return err
	}
	nodes, err := dump(a)
	if err != nil {
		return err
	}
	// Kill the server while a and b still hold their sessions.
	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	return save(out, filepath.Join(work, "data", "version-2"), nodes)
}

func connect(addr string) (*zk.Conn, error) {
	c, ev, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				return c, nil
			}
		case <-deadline:
			return nil, fmt.Errorf("no session with %s", addr)
		}
	}
}

func must(_ any, err error) {
	if err != nil {
		panic(err)
	}
}

func build(addr string, a, b *zk.Conn) error {
	open := zk.WorldACL(zk.PermAll)
	must(nil, a.AddAuth("digest", []byte("alice:secret")))
	must(a.Create("/app", []byte("hello"), 0, open))
	must(a.Create("/app/config", []byte(`{"v":0}`), 0, open))
	for i := 1; i <= 3; i++ {
		must(a.Set("/app/config", []byte(fmt.Sprintf(`{"v":%d}`, i)), -1))
	}
	must(a.SetACL("/app/config", zk.WorldACL(zk.PermRead|zk.PermWrite|zk.PermAdmin), -1))
	for i := 0; i < 3; i++ {
		must(a.Create("/app/seq-", []byte{byte(i)}, zk.FlagSequence, open))
	}
	must(nil, a.Delete("/app/seq-0000000003", -1))
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	must(a.Create("/app/bin", bin, 0, open))
	must(a.Create("/app/null", nil, 0, open))
	must(a.Create("/app/empty", []byte{}, 0, open))
	must(a.Create("/app/tmp", []byte("x"), 0, open))
	must(nil, a.Delete("/app/tmp", -1))
	secure := append(zk.DigestACL(zk.PermAll, "alice", "secret"), zk.WorldACL(zk.PermRead)...)
	must(a.Create("/secure", []byte("s3cret"), 0, secure))
	must(a.Create("/secure/child", []byte("c"), 0, zk.DigestACL(zk.PermAll, "alice", "secret")))
	must(a.CreateContainer("/c1", nil, zk.FlagContainer, open))
	must(a.Create("/c1/x", []byte("x"), 0, open))
	must(a.CreateContainer("/c2", []byte("was-used"), zk.FlagContainer, open))
	must(a.Create("/c2/y", nil, 0, open))
	must(nil, a.Delete("/c2/y", -1))
	must(a.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, open, time.Hour))
	must(a.Create("/multi", nil, 0, open))
	must(a.Multi(
		&zk.CreateRequest{Path: "/multi/a", Data: []byte("a"), Acl: open},
		&zk.CreateRequest{Path: "/multi/b", Data: []byte("b"), Acl: open},
		&zk.SetDataRequest{Path: "/app", Data: []byte("hello2"), Version: 0},
		&zk.DeleteRequest{Path: "/app/seq-0000000001", Version: -1},
	))
	if _, err := a.Multi(
		&zk.CreateRequest{Path: "/multi/never", Data: []byte("n"), Acl: open},
		&zk.CheckVersionRequest{Path: "/app", Version: 99},
	); err == nil {
		return fmt.Errorf("failing multi succeeded")
	}
	if _, err := a.Create("/app", nil, 0, open); err == nil {
		return fmt.Errorf("duplicate create succeeded")
	}
	must(b.Create("/app/eph", []byte("e"), zk.FlagEphemeral, open))
	must(b.Create("/app/eseq-", []byte("e"), zk.FlagEphemeral|zk.FlagSequence, open))
	c, err := connect(addr)
	if err != nil {
		return err
	}
	must(c.Create("/app/gone", []byte("g"), zk.FlagEphemeral, open))
	c.Close() // closeSession deletes /app/gone
	must(a.Create("/bulk", nil, 0, open))
	for i := 0; i < 40; i++ {
		p := fmt.Sprintf("/bulk/n%02d", i)
		must(a.Create(p, []byte(p), 0, open))
		if i%3 == 0 {
			must(a.Set(p, []byte(p+"!"), 0))
		}
		if i%7 == 0 {
			must(nil, a.Delete(p, -1))
		}
	}
	must(a.Create("/zookeeper/quota/bulk", nil, 0, open))
	must(a.Create("/zookeeper/quota/bulk/zookeeper_limits", []byte("count=100,bytes=-1"), 0, open))
	must(a.Create("/last", []byte("end"), 0, open))
	return nil
}

func dump(c *zk.Conn) ([]goldenNode, error) {
	var nodes []goldenNode
	var walk func(p string) error
	walk = func(p string) error {
		data, st, err := c.Get(p)
		if err != nil {
			return fmt.Errorf("get %s: %w", p, err)
		}
		acl, _, err := c.GetACL(p)
		if err != nil {
			return fmt.Errorf("getACL %s: %w", p, err)
		}
		n := goldenNode{Path: p, ACL: acl, Stat: *st, Kind: "persistent"}
		if data != nil {
			s := base64.StdEncoding.EncodeToString(data)
			n.Data = &s
		}
		if st.EphemeralOwner != 0 {
			n.Kind = "ephemeral"
		}
		nodes = append(nodes, n)
		kids, _, err := c.Children(p)
		if err != nil {
			return err
		}
		sort.Strings(kids)
		for _, k := range kids {
			child := p + "/" + k
			if p == "/" {
				child = "/" + k
			}
			if err := walk(child); err != nil {
				return err
			}
		}
		return nil
	}
	err := walk("/")
	return nodes, err
}

func save(out, v2 string, nodes []goldenNode) error {
	for i := range nodes {
		switch nodes[i].Path {
		case "/c1", "/c2":
			nodes[i].Kind = "container"
		case "/ttl":
			nodes[i].Kind = "ttl"
		}
	}
	dst := filepath.Join(out, "version-2")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(v2)
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(v2, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	js, err := json.MarshalIndent(nodes, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "golden.json"), append(js, '\n'), 0o644)
}
