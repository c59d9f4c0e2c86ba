// Command goclient runs the go-zookeeper scenarios of the compatibility
// suite:
//
//	goclient CONNECT_STRING SCENARIO
//
// Each scenario works under its own top-level node (/go-<scenario>), prints
// one line per check ("ok ..." or "FAIL ...") and only values that are the
// same on every compatible server, so the runner can compare two servers'
// transcripts. The exit status is 0 only if every check passed. Every wait
// is bounded.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// wait bounds every wait for an event or a state.
const wait = 15 * time.Second

// checks prints check results and counts the failures.
type checks struct {
	out    io.Writer
	failed int
}

func (c *checks) check(ok bool, what string, detail ...any) bool {
	if ok {
		fmt.Fprintf(c.out, "ok   %s\n", what)
		return true
	}
	c.failed++
	extra := ""
	if len(detail) > 0 {
		extra = "  (" + fmt.Sprint(detail...) + ")"
	}
	fmt.Fprintf(c.out, "FAIL %s%s\n", what, extra)
	return false
}

func (c *checks) equal(got, want any, what string) bool {
	return c.check(reflect.DeepEqual(got, want), fmt.Sprintf("%s = %v", what, want), "got ", got)
}

func (c *checks) isErr(err, want error, what string) bool {
	return c.check(errors.Is(err, want), fmt.Sprintf("%s: %v", what, want), "got ", err)
}

// noErr records a failed check for an unexpected error.
func (c *checks) noErr(err error, what string) bool {
	return c.check(err == nil, what, err)
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// session opens a connection to addr (one server or a comma-separated
// list) and waits until it has a session.
func session(addr string) (*zk.Conn, error) {
	conn, events, err := zk.Connect(strings.Split(addr, ","), 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	deadline := time.After(wait)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn, nil
			}
		case <-deadline:
			conn.Close()
			return nil, fmt.Errorf("connect %s: no session within %v", addr, wait)
		}
	}
}

// event waits for one watch event.
func event(ch <-chan zk.Event) (zk.Event, bool) {
	select {
	case ev := <-ch:
		return ev, true
	case <-time.After(wait):
		return zk.Event{}, false
	}
}

var open = zk.WorldACL(zk.PermAll)

func crud(c *checks, addr string, conn *zk.Conn) error {
	const base = "/go-crud"
	if _, err := conn.Create(base, []byte("root"), 0, open); err != nil {
		return err
	}
	data, st, err := conn.Get(base)
	c.noErr(err, "get")
	c.equal(string(data), "root", "data")
	c.check(st.Czxid == st.Mzxid && st.Mzxid == st.Pzxid, "czxid == mzxid == pzxid")
	c.equal([]int32{st.Version, st.Cversion, st.Aversion, st.DataLength}, []int32{0, 0, 0, 4}, "versions and dataLength")

	seq, err := conn.Create(base+"/s-", nil, zk.FlagSequence, open)
	c.noErr(err, "sequential create")
	c.equal(seq, base+"/s-0000000000", "first sequential name")
	eph, err := conn.Create(base+"/e", nil, zk.FlagEphemeral, open)
	c.noErr(err, "ephemeral create")
	_, est, _ := conn.Exists(eph)
	c.check(est != nil && est.EphemeralOwner == conn.SessionID(), "ephemeralOwner is the session id")
	_, err = conn.Create(eph+"/kid", nil, 0, open)
	c.isErr(err, zk.ErrNoChildrenForEphemerals, "child of an ephemeral")
	cont, err := conn.CreateContainer(base+"/c", nil, zk.FlagContainer, open)
	c.noErr(err, "container create")
	c.equal(cont, base+"/c", "container path")
	_, err = conn.CreateTTL(base+"/t", nil, zk.FlagTTL, open, time.Minute)
	c.noErr(err, "TTL create (extendedTypesEnabled)")
	_, tst, _ := conn.Exists(base + "/t")
	c.check(tst != nil && tst.EphemeralOwner == 0, "TTL node shows ephemeralOwner 0")
	prot, err := conn.CreateProtectedEphemeralSequential(base+"/p", nil, open)
	c.noErr(err, "protected ephemeral sequential create")
	c.check(strings.HasPrefix(prot, base+"/_c_") && strings.HasSuffix(prot, "-p0000000004"), "protected name", prot)

	_, err = conn.Set(base, []byte("x"), 5)
	c.isErr(err, zk.ErrBadVersion, "set with a wrong version")
	st, err = conn.Set(base, []byte("v1"), 0)
	c.noErr(err, "set")
	c.equal(st.Version, int32(1), "version after set")
	_, err = conn.Create(base, nil, 0, open)
	c.isErr(err, zk.ErrNodeExists, "create existing")
	_, err = conn.Create(base+"/no/such", nil, 0, open)
	c.isErr(err, zk.ErrNoNode, "create without parent")
	c.isErr(conn.Delete(base, -1), zk.ErrNotEmpty, "delete non-empty")
	c.isErr(conn.Delete(base+"/missing", -1), zk.ErrNoNode, "delete missing")
	c.isErr(conn.Delete(seq, 3), zk.ErrBadVersion, "delete with a wrong version")
	c.noErr(conn.Delete(seq, 0), "delete")
	kids, pst, err := conn.Children(base)
	c.noErr(err, "children")
	sort.Strings(kids)
	c.check(len(kids) == 4 && kids[1] == "c" && kids[2] == "e" && kids[3] == "t", "children after delete", kids)
	// 5 creations, 1 delete: visible cversion = 2*5 - 4.
	c.equal([]int32{pst.Cversion, pst.NumChildren}, []int32{6, 4}, "parent cversion and numChildren")
	_, err = conn.Create("bad", nil, 0, open)
	c.isErr(err, zk.ErrInvalidPath, "relative path rejected by the client")
	p, err := conn.Sync(base + "/nowhere")
	c.noErr(err, "sync")
	c.equal(p, base+"/nowhere", "sync echoes its path")
	return nil
}

func multi(c *checks, addr string, conn *zk.Conn) error {
	const base = "/go-multi"
	if _, err := conn.Create(base, nil, 0, open); err != nil {
		return err
	}
	res, err := conn.Multi(
		&zk.CreateRequest{Path: base + "/a", Data: []byte("1"), Acl: open},
		&zk.CreateRequest{Path: base + "/s-", Acl: open, Flags: zk.FlagSequence},
		&zk.SetDataRequest{Path: base + "/a", Data: []byte("2"), Version: 0},
		&zk.CheckVersionRequest{Path: base + "/a", Version: 1},
		&zk.DeleteRequest{Path: base + "/s-0000000001", Version: -1},
	)
	c.noErr(err, "multi")
	if c.equal(len(res), 5, "multi results") {
		c.equal(res[0].String, base+"/a", "create result")
		c.equal(res[1].String, base+"/s-0000000001", "sequential create result")
		c.check(res[2].Stat != nil && res[2].Stat.Version == 1, "setData result stat")
	}
	_, st, _ := conn.Get(base + "/a")
	c.check(st.Czxid == st.Mzxid, "one zxid for the whole multi")
	res, err = conn.Multi(
		&zk.CreateRequest{Path: base + "/b", Acl: open},
		&zk.CheckVersionRequest{Path: base + "/a", Version: 9},
		&zk.DeleteRequest{Path: base + "/missing", Version: -1},
	)
	c.isErr(err, zk.ErrBadVersion, "failed multi")
	var errs []string
	for _, r := range res {
		errs = append(errs, fmt.Sprint(r.Error))
	}
	c.equal(errs, []string{"<nil>", zk.ErrBadVersion.Error(), "unknown error: -2"}, "failed multi results (-2 = runtime inconsistency)")
	ok, _, _ := conn.Exists(base + "/b")
	c.check(!ok, "failed multi applied nothing")
	return nil
}

func watches(c *checks, addr string, conn *zk.Conn) error {
	const base = "/go-watch"
	if _, err := conn.Create(base, nil, 0, open); err != nil {
		return err
	}
	if _, err := conn.Create(base+"/d", []byte("0"), 0, open); err != nil {
		return err
	}
	other, err := session(addr)
	if err != nil {
		return err
	}
	defer other.Close()

	_, _, dataCh, err := conn.GetW(base + "/d")
	c.noErr(err, "getData watch")
	_, _, childCh, err := conn.ChildrenW(base)
	c.noErr(err, "getChildren watch")
	found, _, existCh, err := conn.ExistsW(base + "/later")
	c.check(err == nil && !found, "exists watch on a missing node", err)

	_, err = other.Set(base+"/d", []byte("1"), -1)
	c.noErr(err, "set by another session")
	ev, ok := event(dataCh)
	c.check(ok && ev.Type == zk.EventNodeDataChanged && ev.Path == base+"/d", "NodeDataChanged", ev)
	_, err = other.Create(base+"/later", nil, 0, open)
	c.noErr(err, "create by another session")
	ev, ok = event(existCh)
	c.check(ok && ev.Type == zk.EventNodeCreated && ev.Path == base+"/later", "NodeCreated", ev)
	ev, ok = event(childCh)
	c.check(ok && ev.Type == zk.EventNodeChildrenChanged && ev.Path == base, "NodeChildrenChanged", ev)

	_, _, dataCh, _ = conn.GetW(base + "/later")
	_, _, childCh, _ = conn.ChildrenW(base + "/later")
	c.noErr(other.Delete(base+"/later", -1), "delete by another session")
	ev, ok = event(dataCh)
	c.check(ok && ev.Type == zk.EventNodeDeleted, "NodeDeleted to the data watch", ev)
	ev, ok = event(childCh)
	c.check(ok && ev.Type == zk.EventNodeDeleted, "NodeDeleted to the child watch", ev)

	// Ephemeral cleanup fires watches of other sessions.
	if _, err := other.Create(base+"/eph", nil, zk.FlagEphemeral, open); err != nil {
		return err
	}
	_, _, dataCh, _ = conn.GetW(base + "/eph")
	other.Close()
	ev, ok = event(dataCh)
	c.check(ok && ev.Type == zk.EventNodeDeleted && ev.Path == base+"/eph", "NodeDeleted when the owner's session closes", ev)
	return nil
}

func acl(c *checks, addr string, conn *zk.Conn) error {
	const base = "/go-acl"
	if _, err := conn.Create(base, nil, 0, open); err != nil {
		return err
	}
	c.noErr(conn.AddAuth("digest", []byte("alice:secret")), "addauth digest")
	digest := zk.DigestACL(zk.PermAll, "alice", "secret")
	c.equal(digest[0].ID, "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=", "digest id")
	_, err := conn.Create(base+"/a", []byte("d"), 0, append(digest, zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}))
	c.noErr(err, "create with a digest ACL")
	other, err := session(addr)
	if err != nil {
		return err
	}
	defer other.Close()
	acls, _, err := other.GetACL(base + "/a")
	c.noErr(err, "getACL by a reader")
	var ids []string
	for _, a := range acls {
		ids = append(ids, a.Scheme+":"+a.ID)
	}
	c.equal(ids, []string{"digest:alice:x", "world:anyone"}, "digest masked without ADMIN")
	_, err = other.Set(base+"/a", []byte("x"), -1)
	c.isErr(err, zk.ErrNoAuth, "set without WRITE")
	_, err = other.Create(base+"/a/kid", nil, 0, open)
	c.isErr(err, zk.ErrNoAuth, "create without CREATE")
	_, err = conn.SetACL(base+"/a", open, 4)
	c.isErr(err, zk.ErrBadVersion, "setACL with a wrong aversion")
	st, err := conn.SetACL(base+"/a", open, 0)
	c.noErr(err, "setACL")
	c.check(st != nil && st.Aversion == 1, "aversion after setACL")
	_, err = conn.Create(base+"/bad", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "nocolon"}})
	c.isErr(err, zk.ErrInvalidACL, "malformed digest ACL")
	_, err = conn.Create(base+"/auth", nil, 0, zk.AuthACL(zk.PermAll))
	c.noErr(err, "create with auth:: ACL")
	acls, _, _ = conn.GetACL(base + "/auth")
	c.check(len(acls) == 1 && acls[0].Scheme == "digest" && acls[0].ID == digest[0].ID, "auth:: expands to the digest id", acls)
	return nil
}

func lock(c *checks, addr string, conn *zk.Conn) error {
	const path = "/go-lock"
	const workers, rounds = 4, 10
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		counter int
		inside  int
		most    int
		errs    []error
	)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := session(addr)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			defer s.Close()
			l := zk.NewLock(s, path, open)
			for range rounds {
				if err := l.Lock(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("worker %d: %w", i, err))
					mu.Unlock()
					return
				}
				mu.Lock()
				inside++
				most = max(most, inside)
				v := counter
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				counter = v + 1
				inside--
				mu.Unlock()
				if err := l.Unlock(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		c.check(true, "all lock workers finished")
	case <-time.After(2 * wait):
		c.check(false, "all lock workers finished")
		return errors.New("lock workers hung")
	}
	c.check(len(errs) == 0, "no lock errors", errs)
	c.equal(counter, workers*rounds, "counter guarded by the lock")
	c.equal(most, 1, "at most one holder at a time")
	kids, _, err := conn.Children(path)
	c.check(err == nil && len(kids) == 0, "no lock nodes left", kids, err)
	return nil
}

var scenarios = map[string]func(*checks, string, *zk.Conn) error{
	"crud": crud, "multi": multi, "watches": watches, "acl": acl, "lock": lock,
	"ensemble-kill": ensembleKill,
}

func main() {
	if len(os.Args) != 3 || scenarios[os.Args[2]] == nil {
		names := make([]string, 0, len(scenarios))
		for n := range scenarios {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Fprintf(os.Stderr, "usage: goclient CONNECT %v\n", names)
		os.Exit(2)
	}
	addr, name := os.Args[1], os.Args[2]
	c := &checks{out: os.Stdout}
	conn, err := session(addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = scenarios[name](c, addr, conn)
	conn.Close()
	c.check(err == nil, "scenario ran to the end", err)
	fmt.Printf("%s: %d failed check(s)\n", name, c.failed)
	if c.failed > 0 {
		os.Exit(1)
	}
}
