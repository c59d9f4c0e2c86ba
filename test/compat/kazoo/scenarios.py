#!/usr/bin/python3
"""kazoo (python3-kazoo, Debian) scenarios for the compatibility suite.

    /usr/bin/python3 scenarios.py CONNECT_STRING SCENARIO

Each scenario works under its own top-level node (/kazoo-<scenario>), prints
one line per check (`ok ...` or `FAIL ...`) and only values that are the
same on every compatible server, so the runner can compare two servers'
transcripts. The exit status is 0 only if every check passed. Waits are
bounded: every wait has a timeout.
"""

import logging
import os
import socket
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (AuthFailedError, BadArgumentsError, BadVersionError,
                              NoAuthError, NodeExistsError, NoNodeError,
                              NotEmptyError, NoChildrenForEphemeralsError,
                              LockTimeout, NotReadOnlyCallError,
                              RolledBackError, KazooException)
from kazoo.protocol.states import KeeperState
from kazoo.recipe.cache import TreeCache, TreeEvent
from kazoo.security import (ACL, Id, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE,
                            make_digest_acl, Permissions)

WAIT = 15.0  # seconds any single wait may take


class Checks:
    """Collects check results and prints them as they happen."""

    def __init__(self):
        self.failed = 0

    def check(self, cond, what, detail=""):
        if cond:
            print(f"ok   {what}", flush=True)
        else:
            self.failed += 1
            extra = f"  ({detail})" if detail else ""
            print(f"FAIL {what}{extra}", flush=True)
        return cond

    def equal(self, got, want, what):
        return self.check(got == want, f"{what} = {want!r}", f"got {got!r}")

    def raises(self, exc, fn, what):
        try:
            fn()
        except exc:
            return self.check(True, f"{what} raises {exc.__name__}")
        except Exception as err:  # report any other error class by name
            return self.check(False, f"{what} raises {exc.__name__}",
                              f"got {type(err).__name__}: {err}")
        return self.check(False, f"{what} raises {exc.__name__}", "no error")


def wait_until(cond, timeout=WAIT):
    """Poll cond every 20 ms until it holds or timeout passes."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def connect(hosts):
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=WAIT)
    return client


# --- plain operations -----------------------------------------------------

def scenario_crud(c, hosts, zk):
    base = "/kazoo-crud"
    path, st = zk.create(base, b"root", include_data=True)
    c.equal(path, base, "create returns the path")
    c.check(st.czxid == st.mzxid == st.pzxid, "new node: czxid == mzxid == pzxid")
    c.equal((st.version, st.cversion, st.aversion, st.numChildren),
            (0, 0, 0, 0), "new node versions and numChildren")
    c.equal(st.dataLength, 4, "dataLength")
    data, st2 = zk.get(base)
    c.equal(data, b"root", "get data")
    c.equal(st2, st, "get stat equals create2 stat")
    empty, _ = zk.get(zk.create(base + "/empty"))
    c.equal(empty, b"", "empty data comes back empty")

    names = [zk.create(base + "/seq-", b"", sequence=True) for _ in range(3)]
    c.equal(names, [base + "/seq-%010d" % i for i in (1, 2, 3)],
            "sequential names count every child creation")
    zk.delete(names[1])
    again = zk.create(base + "/seq-", sequence=True)
    c.equal(again, base + "/seq-0000000004", "sequence numbers are not reused")
    _, pst = zk.get(base)
    # 5 creations (empty + 4 seq), 1 delete: visible cversion = 2*5 - 4.
    c.equal((pst.cversion, pst.numChildren), (6, 4),
            "parent cversion and numChildren after creates and a delete")
    c.equal(sorted(zk.get_children(base)),
            ["empty", "seq-0000000001", "seq-0000000003", "seq-0000000004"],
            "children")

    st = zk.set(base, b"v1")
    c.equal((st.version, st.dataLength), (1, 2), "set bumps version")
    c.check(st.mzxid > st.czxid, "set: mzxid > czxid")
    c.raises(BadVersionError, lambda: zk.set(base, b"x", version=0), "set with stale version")
    c.equal(zk.set(base, b"v2", version=1).version, 2, "set with current version")
    c.raises(NoNodeError, lambda: zk.set(base + "/missing", b"x"), "set on missing node")
    c.raises(NoNodeError, lambda: zk.get(base + "/missing"), "get on missing node")
    c.equal(zk.exists(base + "/missing"), None, "exists on missing node")
    c.raises(NodeExistsError, lambda: zk.create(base), "create existing")
    c.raises(NoNodeError, lambda: zk.create(base + "/a/b"), "create without parent")
    c.raises(NotEmptyError, lambda: zk.delete(base), "delete non-empty")
    c.raises(BadVersionError, lambda: zk.delete(base + "/empty", version=3),
             "delete with wrong version")

    eph, est = zk.create(base + "/eph", b"e", ephemeral=True, include_data=True)
    c.check(est.ephemeralOwner == zk.client_id[0], "ephemeralOwner is the session id",
            f"{est.ephemeralOwner:#x} != {zk.client_id[0]:#x}")
    c.raises(NoChildrenForEphemeralsError, lambda: zk.create(eph + "/kid"),
             "child of an ephemeral")

    zk.ensure_path(base + "/deep/er/path")
    c.check(zk.exists(base + "/deep/er/path") is not None, "ensure_path creates parents")
    zk.delete(base + "/deep", recursive=True)
    c.equal(zk.exists(base + "/deep"), None, "recursive delete")

    c.equal(zk.sync(base + "/nowhere"), base + "/nowhere", "sync echoes its path")
    root, rst = zk.get("/zookeeper")
    c.equal((root, rst.czxid), (b"", 0), "/zookeeper is empty with czxid 0")
    c.check(check_zxid_per_failed_write(zk, base), "a failed write consumes one zxid")

    other = connect(hosts)
    try:
        c.check(other.exists(eph) is not None, "another session sees the ephemeral")
        zk.stop()
        c.check(wait_until(lambda: other.exists(eph) is None),
                "ephemeral removed when its session closes")
    finally:
        other.stop()
        other.close()


def check_zxid_per_failed_write(zk, base):
    """create, failed create, create: the czxids differ by exactly 2.

    Retried up to three times because a container reaper or an expiring
    session elsewhere can also take a zxid in between.
    """
    for attempt in range(3):
        _, a = zk.create(f"{base}/z{attempt}a", include_data=True)
        try:
            zk.create(f"{base}/z{attempt}a")
        except NodeExistsError:
            pass
        _, b = zk.create(f"{base}/z{attempt}b", include_data=True)
        if b.czxid - a.czxid == 2:
            return True
    return False


def scenario_transaction(c, hosts, zk):
    base = "/kazoo-txn"
    zk.create(base)
    zk.create(base + "/old", b"o")
    t = zk.transaction()
    t.create(base + "/a", b"1")
    t.create(base + "/s-", b"", sequence=True)
    t.set_data(base + "/a", b"2")
    t.check(base + "/a", 1)
    t.delete(base + "/old")
    results = t.commit()
    c.equal(results, [base + "/a", base + "/s-0000000002", results[2], True, True],
            "transaction results")
    c.check(hasattr(results[2], "version") and results[2].version == 1,
            "set_data in transaction returns the new stat")
    data, st = zk.get(base + "/a")
    c.equal((data, st.version), (b"2", 1), "transaction applied")
    c.check(st.czxid == st.mzxid, "every op of a transaction has the same zxid")

    t = zk.transaction()
    t.create(base + "/b")
    t.check(base + "/a", 7)
    t.delete(base + "/missing")
    results = t.commit()
    c.equal([type(r).__name__ for r in results],
            ["RolledBackError", "BadVersionError", "RuntimeInconsistency"],
            "failed transaction results")
    c.equal(zk.exists(base + "/b"), None, "failed transaction applied nothing")

    t = zk.transaction()
    t.create(base + "/p")
    t.create(base + "/p/c")
    t.delete(base + "/p/c")
    c.equal(t.commit(), [base + "/p", base + "/p/c", True],
            "later ops see earlier ops of the same transaction")
    c.equal(zk.get_children(base + "/p"), [], "created and deleted in one transaction")


def scenario_acl(c, hosts, zk):
    base = "/kazoo-acl"
    zk.create(base)
    zk.add_auth("digest", "alice:secret")
    acl = [make_digest_acl("alice", "secret", all=True),
           ACL(Permissions.READ, Id("world", "anyone"))]
    zk.create(base + "/a", b"data", acl=acl)
    got, st = zk.get_acls(base + "/a")
    c.equal([(a.perms, a.id.scheme, a.id.id) for a in got],
            [(31, "digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="), (1, "world", "anyone")],
            "getACL as owner shows the digest")
    c.equal(st.aversion, 0, "aversion")

    anon = connect(hosts)
    try:
        got, _ = anon.get_acls(base + "/a")
        c.equal([a.id.id for a in got], ["alice:x", "anyone"],
                "getACL without ADMIN masks the digest")
        c.equal(anon.get(base + "/a")[0], b"data", "world READ allows get")
        c.raises(NoAuthError, lambda: anon.set(base + "/a", b"x"), "set without WRITE")
        c.raises(NoAuthError, lambda: anon.set_acls(base + "/a", OPEN_ACL_UNSAFE), "setACL without ADMIN")
        c.raises(NoAuthError, lambda: anon.create(base + "/a/kid"), "create without CREATE")
        anon.add_auth("digest", "alice:secret")
        c.equal(anon.set(base + "/a", b"y").version, 1, "set after addauth")
        c.raises(BadVersionError, lambda: anon.set_acls(base + "/a", OPEN_ACL_UNSAFE, version=5),
                 "setACL with wrong aversion")
        st = anon.set_acls(base + "/a", READ_ACL_UNSAFE, version=0)
        c.equal(st.aversion, 1, "setACL bumps aversion")
    finally:
        anon.stop()
        anon.close()

    zk.create(base + "/auth", acl=[ACL(Permissions.ALL, Id("auth", ""))])
    got, _ = zk.get_acls(base + "/auth")
    c.equal([(a.id.scheme, a.id.id) for a in got],
            [("digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=")],
            "auth: ACL expands to the connection's digest id")
    c.raises(KazooException, lambda: zk.create(base + "/bad", acl=[ACL(31, Id("digest", "nocolon"))]),
             "malformed digest ACL")
    c.raises(KazooException, lambda: zk.create(base + "/bad", acl=[ACL(31, Id("world", "someone"))]),
             "world ACL other than anyone")

    bad = connect(hosts)
    try:
        c.raises(AuthFailedError, lambda: bad.add_auth("nosuchscheme", "x"),
                 "auth with an unknown scheme")
    finally:
        bad.stop()
        bad.close()


# --- recipes ----------------------------------------------------------------

def try_acquire(lock, timeout):
    """acquire with a timeout: False instead of kazoo's LockTimeout."""
    try:
        return lock.acquire(timeout=timeout)
    except LockTimeout:
        return False


def run_threads(targets):
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 2)
    return all(not t.is_alive() for t in threads)


def scenario_lock(c, hosts, zk):
    path = "/kazoo-lock"
    clients = [connect(hosts) for _ in range(3)]
    state = {"counter": 0, "inside": 0, "max": 0}
    guard = threading.Lock()
    rounds = 10

    def worker(client, ident):
        def run():
            lock = client.Lock(path, ident)
            for _ in range(rounds):
                with lock:
                    with guard:
                        state["inside"] += 1
                        state["max"] = max(state["max"], state["inside"])
                    value = state["counter"]
                    time.sleep(0.001)
                    state["counter"] = value + 1
                    with guard:
                        state["inside"] -= 1
        return run

    try:
        done = run_threads([worker(cl, f"w{i}") for i, cl in enumerate(clients)])
        c.check(done, "all lock workers finished")
        c.equal(state["counter"], 3 * rounds, "counter guarded by the lock")
        c.equal(state["max"], 1, "at most one holder at a time")
        lock = clients[0].Lock(path, "holder")
        c.check(lock.acquire(timeout=WAIT), "acquire")
        c.equal(clients[1].Lock(path).contenders(), ["holder"], "contenders")
        other = clients[1].Lock(path, "second")
        c.check(not try_acquire(other, 0.5), "second client waits while held")
        lock.release()
        c.check(other.acquire(timeout=WAIT), "second client acquires after release")
        other.release()
        c.equal(zk.get_children(path), [], "no lock nodes left")
    finally:
        for cl in clients:
            cl.stop()
            cl.close()


def scenario_rwlock(c, hosts, zk):
    path = "/kazoo-rwlock"
    a, b, w = connect(hosts), connect(hosts), connect(hosts)
    try:
        r1, r2 = a.ReadLock(path, "r1"), b.ReadLock(path, "r2")
        c.check(r1.acquire(timeout=WAIT), "first reader acquires")
        c.check(r2.acquire(timeout=WAIT), "second reader acquires while the first holds")
        writer = w.WriteLock(path, "w")
        c.check(not try_acquire(writer, 0.5), "writer waits while readers hold")
        r1.release()
        r2.release()
        c.check(writer.acquire(timeout=WAIT), "writer acquires after readers release")
        r3 = a.ReadLock(path, "r3")
        c.check(not try_acquire(r3, 0.5), "reader waits while the writer holds")
        writer.release()
        c.check(r3.acquire(timeout=WAIT), "reader acquires after the writer releases")
        r3.release()
    finally:
        for cl in (a, b, w):
            cl.stop()
            cl.close()


def scenario_election(c, hosts, zk):
    path = "/kazoo-election"
    clients = [connect(hosts) for _ in range(3)]
    leaders = []
    leader_now = threading.Event()
    release = {name: threading.Event() for name in ("c0", "c1", "c2")}

    def contend(client, name):
        def lead():
            leaders.append(name)
            leader_now.set()
            release[name].wait(WAIT * 2)

        def run():
            try:
                client.Election(path, name).run(lead)
            except Exception:  # the client was stopped under us
                pass
        return run

    threads = [threading.Thread(target=contend(cl, f"c{i}"), daemon=True)
               for i, cl in enumerate(clients)]
    try:
        for t in threads:
            t.start()
        c.check(leader_now.wait(WAIT), "a leader is elected")
        c.check(wait_until(lambda: len(zk.Election(path).contenders()) == 3),
                "three contenders")
        first = leaders[0]
        leader_now.clear()
        clients[int(first[1])].stop()  # the leader's session closes
        c.check(leader_now.wait(WAIT), "a new leader after the leader's session closed")
        c.check(len(leaders) == 2 and leaders[1] != first, "the new leader is another contender")
        c.check(wait_until(lambda: len(zk.Election(path).contenders()) == 2),
                "two contenders left")
        for e in release.values():
            e.set()
    finally:
        for e in release.values():
            e.set()
        for cl in clients:
            cl.stop()
            cl.close()


def scenario_barrier(c, hosts, zk):
    path = "/kazoo-barrier"
    other = connect(hosts)
    try:
        barrier = zk.Barrier(path)
        barrier.create()
        result = {}
        waiter = threading.Thread(
            target=lambda: result.setdefault("ok", other.Barrier(path).wait(WAIT)), daemon=True)
        waiter.start()
        c.check(not other.Barrier(path).wait(0.3), "wait times out while the barrier stands")
        barrier.remove()
        waiter.join(WAIT)
        c.equal(result.get("ok"), True, "waiter passes once the barrier is removed")
    finally:
        other.stop()
        other.close()


def scenario_doublebarrier(c, hosts, zk):
    path = "/kazoo-dbarrier"
    clients = [connect(hosts) for _ in range(3)]
    entered, left = [], []
    guard = threading.Lock()

    def member(client, name):
        def run():
            barrier = client.DoubleBarrier(path, 3)
            barrier.enter()
            with guard:
                entered.append(name)
            barrier.leave()
            with guard:
                left.append(name)
        return run

    try:
        first = threading.Thread(target=member(clients[0], "m0"), daemon=True)
        first.start()
        c.check(not wait_until(lambda: entered, 0.5), "one member alone does not enter")
        done = run_threads([member(clients[1], "m1"), member(clients[2], "m2")])
        first.join(WAIT)
        c.check(done and not first.is_alive(), "all members passed enter and leave")
        c.equal(sorted(entered), ["m0", "m1", "m2"], "entered")
        c.equal(sorted(left), ["m0", "m1", "m2"], "left")
    finally:
        for cl in clients:
            cl.stop()
            cl.close()


def scenario_queue(c, hosts, zk):
    q = zk.Queue("/kazoo-queue")
    for value, prio in ((b"low", 200), (b"a", 100), (b"b", 100), (b"urgent", 1)):
        q.put(value, priority=prio)
    c.equal(len(q), 4, "queue length")
    c.equal([q.get() for _ in range(4)], [b"urgent", b"a", b"b", b"low"],
            "priority then FIFO order")
    c.equal(q.get(), None, "empty queue")


def scenario_lockingqueue(c, hosts, zk):
    path = "/kazoo-lqueue"
    q1 = zk.LockingQueue(path)
    q1.put_all([b"one", b"two"])
    q1.put(b"first", priority=1)
    c.equal(len(q1), 3, "queue length")
    c.equal(q1.get(timeout=WAIT), b"first", "priority item first")
    c.check(q1.holds_lock(), "holds the item lock")
    other = connect(hosts)
    try:
        q2 = other.LockingQueue(path)
        c.equal(q2.get(timeout=WAIT), b"one", "a second consumer skips the locked item")
        c.check(q1.consume(), "consume removes the item")
        c.check(q2.release(), "release puts the item back")
        c.equal(q2.get(timeout=WAIT), b"one", "released item is taken again")
        c.check(q2.consume(), "consume")
        c.equal(q1.get(timeout=WAIT), b"two", "last item")
        c.check(q1.consume(), "consume last")
        c.equal(len(q1), 0, "queue empty")
    finally:
        other.stop()
        other.close()


def scenario_counter(c, hosts, zk):
    path = "/kazoo-counter"
    counter = zk.Counter(path)
    counter += 5
    counter -= 2
    c.equal(counter.value, 3, "counter after +5 -2")
    clients = [connect(hosts) for _ in range(2)]

    def bump(client):
        def run():
            cnt = client.Counter(path)
            for _ in range(10):
                cnt += 1
        return run

    try:
        c.check(run_threads([bump(cl) for cl in clients]), "concurrent increments finished")
        c.equal(zk.Counter(path).value, 23, "no lost increments")
        fc = zk.Counter("/kazoo-counter-float", default=0.0)
        fc += 1.5
        c.equal(fc.value, 1.5, "float counter")
    finally:
        for cl in clients:
            cl.stop()
            cl.close()


def scenario_party(c, hosts, zk):
    path = "/kazoo-party"
    clients = [connect(hosts) for _ in range(3)]
    try:
        parties = [cl.Party(path, f"member{i}") for i, cl in enumerate(clients)]
        for p in parties:
            p.join()
        c.equal(len(zk.Party(path)), 3, "three members")
        c.equal(sorted(zk.Party(path)), ["member0", "member1", "member2"], "members")
        parties[1].leave()
        c.equal(sorted(zk.Party(path)), ["member0", "member2"], "after leave")
        clients[2].stop()
        c.check(wait_until(lambda: sorted(zk.Party(path)) == ["member0"]),
                "a closed session leaves the party")
        shallow = zk.ShallowParty(path + "-shallow", "solo")
        shallow.join()
        c.equal(list(zk.ShallowParty(path + "-shallow")), ["solo"], "shallow party")
    finally:
        for cl in clients:
            cl.stop()
            cl.close()


def scenario_childrenwatch(c, hosts, zk):
    path = "/kazoo-cwatch"
    zk.ensure_path(path)
    seen = []
    zk.ChildrenWatch(path)(lambda children: seen.append(sorted(children)))
    c.check(wait_until(lambda: seen), "called with the initial children")
    for name in ("a", "b"):
        zk.create(f"{path}/{name}")
        c.check(wait_until(lambda: seen and name in seen[-1]), f"sees child {name}")
    zk.delete(path + "/a")
    c.check(wait_until(lambda: seen[-1] == ["b"]), "sees the delete")
    c.equal(seen[0], [], "first call had no children")


def scenario_datawatch(c, hosts, zk):
    path = "/kazoo-dwatch"
    calls = []
    zk.DataWatch(path)(lambda data, stat: calls.append((data, stat.version if stat else None)))
    c.check(wait_until(lambda: calls), "called for a missing node")
    c.equal(calls[0], (None, None), "missing node")
    zk.create(path, b"v0")
    c.check(wait_until(lambda: calls[-1] == (b"v0", 0)), "sees the create")
    zk.set(path, b"v1")
    c.check(wait_until(lambda: calls[-1] == (b"v1", 1)), "sees the set")
    zk.delete(path)
    c.check(wait_until(lambda: calls[-1] == (None, None)), "sees the delete")


def scenario_treecache(c, hosts, zk):
    path = "/kazoo-tree"
    zk.create(path + "/a", b"1", makepath=True)
    events = []
    cache = TreeCache(zk, path)
    cache.listen(lambda ev: events.append(ev))
    cache.start()
    try:
        c.check(wait_until(lambda: any(e.event_type == TreeEvent.INITIALIZED for e in events)),
                "initialized")
        c.equal(cache.get_data(path + "/a").data, b"1", "initial data cached")
        # Each change waits for the cache's event before the next one:
        # kazoo handles a watch event on its event thread at once but a
        # read's result later on its background thread, so a node deleted
        # right after it appeared can be dropped before its own getData
        # result makes it live, and then no NODE_REMOVED is ever published
        # (a race inside kazoo's TreeCache, whatever the server's order).
        kinds = lambda: {(e.event_type, e.event_data.path if e.event_data else None) for e in list(events)}
        steps = ((lambda: zk.create(path + "/a/b", b"2"), TreeEvent.NODE_ADDED, path + "/a/b"),
                 (lambda: zk.set(path + "/a", b"3"), TreeEvent.NODE_UPDATED, path + "/a"),
                 (lambda: zk.create(path + "/c", b"4"), TreeEvent.NODE_ADDED, path + "/c"),
                 (lambda: zk.delete(path + "/a/b"), TreeEvent.NODE_REMOVED, path + "/a/b"))
        for change, kind, p in steps:
            change()
            c.check(wait_until(lambda: (kind, p) in kinds()), f"event {kind} for {p}")
        want = lambda: (cache.get_data(path + "/a") is not None
                        and cache.get_data(path + "/a").data == b"3"
                        and cache.get_data(path + "/c") is not None
                        and cache.get_data(path + "/a/b") is None)
        c.check(wait_until(want), "cache follows creates, sets and deletes")
        c.equal(sorted(cache.get_children(path)), ["a", "c"], "cached children")
    finally:
        cache.close()


# --- error precedence, sessions, four-letter words ------------------------

def error_name(fn):
    """Run fn and name the kazoo exception class it raised ("ok" if none)."""
    try:
        fn()
    except Exception as err:  # the class name is what is compared
        return type(err).__name__
    return "ok"


def scenario_precedence(c, hosts, zk):
    """Which error wins when several checks fail (semantics.md section 4).

    kazoo normalizes paths itself ("/a/" -> "/a", "//" -> "/", "." is a
    ValueError), so path-shape rules are left to the raw-frame tests.
    """
    base = "/kazoo-prec"
    zk.create(base)
    zk.create(base + "/p")
    zk.create(base + "/ro", acl=[ACL(Permissions.READ, Id("world", "anyone"))])
    bad_acl = [ACL(Permissions.ALL, Id("world", "someone"))]
    cases = [
        ("create: invalid ACL + missing parent", lambda: zk.create(base + "/none/x", acl=bad_acl), "InvalidACLError"),
        ("create: control character", lambda: zk.create(base + "/p/a\u0001"), "BadArgumentsError"),
        ("create: character outside the BMP", lambda: zk.create(base + "/p/\U0001F600"), "BadArgumentsError"),
        ("create: under a node without CREATE, existing child", lambda: zk.create(base + "/ro"), "NodeExistsError"),
        ("create: under a node without CREATE", lambda: zk.create(base + "/ro/kid"), "NoAuthError"),
        ("delete: without DELETE on the parent, node missing", lambda: zk.delete(base + "/ro/missing"), "NoAuthError"),
        ("delete: /zookeeper", lambda: zk.delete("/zookeeper"), "BadArgumentsError"),
        ("delete: /", lambda: zk.delete("/"), "BadArgumentsError"),
        ("delete: non-empty with a wrong version", lambda: zk.delete(base, version=7), "BadVersionError"),
        ("set: missing node with a wrong version", lambda: zk.set(base + "/none", b"", version=3), "NoNodeError"),
        ("set: no WRITE and a wrong version", lambda: zk.set(base + "/ro", b"", version=9), "NoAuthError"),
        ("set_acls: invalid ACL on a missing node", lambda: zk.set_acls(base + "/none", bad_acl), "InvalidACLError"),
        ("set: /zookeeper/config", lambda: zk.set("/zookeeper/config", b"x"), "NoAuthError"),
        ("create: / itself", lambda: zk.create("/"), "NodeExistsError"),
    ]
    for what, fn, want in cases:
        c.equal(error_name(fn), want, what)
    c.equal(zk.create(base + "/p/\u00e9t\u00e9"), base + "/p/\u00e9t\u00e9", "non-ASCII BMP names are fine")
    c.equal(zk.create("/zookeeper/kazoo-prec"), "/zookeeper/kazoo-prec", "create under /zookeeper")
    zk.delete("/zookeeper/kazoo-prec")
    c.equal(zk.exists("bad-relative"), None, "exists of a relative path is just missing")
    big = bytes(range(256)) * 3900  # 998,400 bytes: under the 1 MiB frame limit
    zk.create(base + "/big", big)
    data, st = zk.get(base + "/big")
    c.check(data == big and st.dataLength == len(big), "a ~1 MB value round-trips")


class Proxy:
    """A loopback TCP proxy that can cut its connections and refuse new ones."""

    def __init__(self, target):
        host, port = target.split(",")[0].rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.refusing = False
        self.conns = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            if self.refusing:
                conn.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                conn.close()
                continue
            upstream.settimeout(None)
            self.conns += [conn, upstream]
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.close()
            except OSError:
                pass

    def cut(self):
        conns, self.conns = self.conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def close(self):
        self.closed = True
        self.cut()
        self.listener.close()


def scenario_session(c, hosts, zk):
    """Resume after a dropped connection; expiry after a long outage."""
    base = "/kazoo-session"
    zk.create(base)
    proxy = Proxy(hosts)
    states = []
    client = KazooClient(hosts=proxy.address, timeout=4.0)
    client.add_listener(lambda st: states.append(st))
    client.start(timeout=WAIT)
    try:
        sid = client.client_id[0]
        client.create(base + "/eph", ephemeral=True)
        proxy.cut()  # new connections are still let through
        c.check(wait_until(lambda: "SUSPENDED" in states), "client notices the dropped connection")
        c.check(wait_until(lambda: states[-1] == "CONNECTED"), "client reconnects")
        c.check(client.client_id[0] == sid, "the same session is resumed")
        c.check(zk.exists(base + "/eph") is not None, "the ephemeral survived the reconnect")

        gone = threading.Event()
        zk.DataWatch(base + "/eph")(lambda data, stat: gone.set() if stat is None else None)
        proxy.refusing = True
        proxy.cut()
        start = time.monotonic()
        c.check(gone.wait(WAIT), "the ephemeral is deleted when the session expires")
        took = time.monotonic() - start
        c.check(1.5 <= took <= 9.0, "expiry within the session timeout bounds", f"{took:.1f}s")
        proxy.refusing = False
        c.check(wait_until(lambda: "LOST" in states), "the client learns its session expired")
    finally:
        client.stop()
        client.close()
        proxy.close()


def print_keys(word, keys):
    """Print a 4lw's key names, one line per key, so a diff names each one.

    mntr's summary metrics (zk_avg_X, zk_min_X, ...) share one line per X.
    """
    groups = {}
    for key in sorted(keys):
        parts = key.split("_", 2)
        if len(parts) == 3 and parts[1] in ("avg", "min", "max", "cnt", "sum"):
            groups.setdefault("zk_*_" + parts[2], []).append(parts[1])
        else:
            groups[key] = []
    for key in sorted(groups):
        kinds = " ".join(groups[key])
        print(f"{word} key {key}" + (f" ({kinds})" if kinds else ""))


def scenario_fourletter(c, hosts, zk):
    """Four-letter words as monitoring tools read them (kazoo command())."""
    c.equal(zk.command(b"ruok"), "imok", "ruok")
    c.equal(zk.command(b"isro"), "rw", "isro")
    version = zk.server_version()
    c.equal(version[:2], (3, 8), "server_version() parses envi")
    srvr = dict(line.split(": ", 1) for line in zk.command(b"srvr").splitlines() if ": " in line)
    c.equal(sorted(srvr), ["Connections", "Latency min/avg/max", "Mode", "Node count",
                           "Outstanding", "Received", "Sent", "Zookeeper version", "Zxid"], "srvr keys")
    c.equal(srvr.get("Mode"), "standalone", "srvr Mode")
    c.check(srvr.get("Zookeeper version", "").startswith("3.8."), "srvr version starts with 3.8.",
            srvr.get("Zookeeper version"))
    mntr = dict(line.split("\t", 1) for line in zk.command(b"mntr").splitlines() if "\t" in line)
    c.equal(mntr.get("zk_server_state"), "standalone", "mntr zk_server_state")
    for key in ("zk_version", "zk_avg_latency", "zk_max_latency", "zk_min_latency",
                "zk_packets_received", "zk_packets_sent", "zk_num_alive_connections",
                "zk_outstanding_requests", "zk_znode_count", "zk_watch_count",
                "zk_ephemerals_count", "zk_approximate_data_size",
                "zk_open_file_descriptor_count", "zk_max_file_descriptor_count"):
        c.check(key in mntr, f"mntr has {key}")
    print_keys("mntr", mntr)
    conf = dict(line.split("=", 1) for line in zk.command(b"conf").splitlines() if "=" in line)
    for key in ("clientPort", "dataDir", "dataLogDir", "tickTime", "maxClientCnxns",
                "minSessionTimeout", "maxSessionTimeout", "serverId"):
        c.check(key in conf, f"conf has {key}")
    c.equal((conf.get("tickTime"), conf.get("minSessionTimeout"), conf.get("maxSessionTimeout")),
            ("2000", "4000", "40000"), "conf timeouts")
    print_keys("conf", conf)
    envi = dict(line.split("=", 1) for line in zk.command(b"envi").splitlines() if "=" in line)
    print_keys("envi", envi)
    c.check(zk.command(b"wchs").splitlines()[0].endswith("paths"), "wchs shape")
    dirs = zk.command(b"dirs")
    c.check(dirs.startswith("datadir_size: ") and "logdir_size: " in dirs, "dirs shape")
    c.equal(zk.command(b"gtmk"), "306", "gtmk")


# --- ensemble scenarios ----------------------------------------------------
#
# The runner starts three members; HOSTS lists them in member order (member N
# is the N-th address). "@control VERB [N]" lines on stdout ask the runner to
# act on a member (kill, stop, cont, restart, leader, wait); it answers one
# line on stdin, "@ok [VALUE]" or "@error ...".

FAILOVER = 40.0  # an election, or a quorum loss and its return
ENSEMBLE_SESSION = 20.0


def control(command):
    """Ask the runner to act on the ensemble; return the value of its @ok."""
    print(f"@control {command}", flush=True)
    reply = sys.stdin.readline().strip()
    if reply != "@ok" and not reply.startswith("@ok "):
        raise RuntimeError(f"control {command}: {reply!r}")
    return reply[3:].strip()


def member_of(client, hosts):
    """The member (1-based position in hosts) client is connected to, or 0.

    kazoo has no public accessor for the connected server; the socket of
    its connection has it.
    """
    sock = getattr(client._connection, "_socket", None)
    if sock is None:
        return 0
    try:
        port = sock.getpeername()[1]
    except OSError:
        return 0
    for i, hp in enumerate(hosts.split(",")):
        if hp.endswith(f":{port}"):
            return i + 1
    return 0


def four_letter(host_port, word):
    host, port = host_port.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                data = s.recv(4096)
                if not data:
                    break
                chunks.append(data)
            return b"".join(chunks).decode().strip()
    except OSError as err:
        return f"error: {err}"


def scenario_ensemble_kill(c, hosts, zk):
    """SIGKILL the leader, the member a client is on: it reconnects to
    another member with the same session; its ephemeral survives, its watch
    fires."""
    base = "/kazoo-ensemble-kill"
    states = []
    leader = int(control("leader"))
    # Every member in the list, the leader first and tried first.
    members = hosts.split(",")
    ordered = ",".join(members[leader - 1:] + members[:leader - 1])
    client = KazooClient(hosts=ordered, timeout=ENSEMBLE_SESSION, randomize_hosts=False)
    client.add_listener(states.append)
    client.start(timeout=WAIT)
    try:
        sid = client.client_id[0]
        client.create(base + "/data", b"0", makepath=True)
        client.create(base + "/eph", ephemeral=True)
        fired = threading.Event()
        client.get(base + "/data", watch=lambda ev: fired.set())
        target = member_of(client, hosts)
        c.check(target == leader, "client is on the leader")
        control(f"kill {target}")
        c.check(wait_until(lambda: "SUSPENDED" in states), "client is SUSPENDED")
        c.check(wait_until(lambda: states[-1] == "CONNECTED", FAILOVER), "client is CONNECTED again")
        now = member_of(client, hosts)
        c.check(now not in (0, target), "to another member", f"member {now}")
        c.equal(client.client_id[0] == sid, True, "same session id after the failover")
        st = client.exists(base + "/eph")
        c.check(st is not None and st.ephemeralOwner == sid, "the ephemeral survives, owned by the session")
        other = KazooClient(hosts=hosts, timeout=ENSEMBLE_SESSION)
        other.start(timeout=WAIT)
        try:
            other.set(base + "/data", b"1")
            c.check(fired.wait(WAIT), "the data watch set before fires after")
        finally:
            other.stop()
            other.close()
        c.check("LOST" not in states, "never LOST", states)
    finally:
        client.stop()
        client.close()


def scenario_ensemble_readonly(c, hosts, zk):
    """Read-only mode: the member left when the two others are stopped
    serves a read_only client reads and refuses its writes."""
    base = "/kazoo-ensemble-readonly"
    zk.stop()  # the runner's client: its member may be one that stops
    states = []
    rw = KazooClient(hosts=hosts, timeout=ENSEMBLE_SESSION)
    rw.add_listener(states.append)
    rw.start(timeout=WAIT)
    ro = None
    try:
        rw.create(base, b"v0")
        # With local sessions enabled, an ephemeral makes the session global.
        rw.create(base + "/eph", ephemeral=True)
        sid = rw.client_id[0]
        kept = member_of(rw, hosts)
        kept_addr = hosts.split(",")[kept - 1]
        others = [m for m in range(1, len(hosts.split(",")) + 1) if m != kept]
        for m in others:
            control(f"stop {m}")
        c.check(wait_until(lambda: "SUSPENDED" in states, FAILOVER), "the member without a quorum disconnects the client")
        if not c.check(wait_until(lambda: four_letter(kept_addr, "isro") == "ro", FAILOVER),
                       "the member turns read-only (isro = ro)"):
            for m in others:
                control(f"cont {m}")
            return

        ro = KazooClient(hosts=hosts, timeout=6.0, read_only=True)
        ro.start(timeout=FAILOVER)
        c.equal(ro.client_state, KeeperState.CONNECTED_RO, "read_only client state")
        c.equal(ro.state, "CONNECTED", "read_only client KazooState")
        c.equal(member_of(ro, hosts) == kept, True, "on the member that still runs")
        c.equal(ro.get(base)[0], b"v0", "get works")
        c.equal(ro.get_children(base), ["eph"], "get_children works")
        c.raises(NotReadOnlyCallError, lambda: ro.create(base + "/x"), "create")
        c.raises(NotReadOnlyCallError, lambda: ro.set(base, b"v1"), "set")
        c.check(rw.client_state != KeeperState.CONNECTED_RO, "the read-write session is not resumed read-only")

        for m in others:
            control(f"cont {m}")
        c.check(wait_until(lambda: states[-1] == "CONNECTED", FAILOVER), "the read-write client is CONNECTED again")
        c.equal(rw.client_id[0] == sid, True, "same session")
        st = rw.exists(base + "/eph")
        c.check(st is not None and st.ephemeralOwner == sid, "its ephemeral survives")
        c.check("LOST" not in states, "never LOST", states)
        c.check(wait_until(lambda: ro.client_state == KeeperState.CONNECTED, FAILOVER),
                "the read_only client is read-write again", ro.client_state)
        ro.create(base + "/after")
        # The two sessions may be on different members: a read sees another
        # session's write only after a sync, in ZooKeeper as here.
        rw.sync(base)
        c.check(rw.exists(base + "/after") is not None, "and may write")
    finally:
        for client in (rw, ro):
            if client is not None:
                client.stop()
                client.close()


# --- secured servers ---------------------------------------------------------
#
# kazoo/tls runs against the runner's secured server (HOSTS is its TLS-only
# port) with the key material the runner made (directory in ZKCOMPAT_KEYS);
# kazoo/sasl against the plain server, whose JAAS file lists bob.

ALICE_DN = "CN=alice,OU=compat,O=zkserverd"


def key_file(name):
    return os.path.join(os.environ["ZKCOMPAT_KEYS"], name)


def tls_client(hosts, cert):
    """A client (not started) with the named certificate, trusting the suite's CA."""
    return KazooClient(hosts=hosts, timeout=10.0, use_ssl=True, verify_certs=True,
                       ca=key_file("ca.pem"), certfile=key_file(cert + ".pem"),
                       keyfile=key_file(cert + ".key"))


def connect_tls(hosts):
    client = tls_client(hosts, "alice")
    client.start(timeout=WAIT)
    return client


def gets_no_session(client, seconds=5.0):
    """Start client; True if it has no session after seconds. Closes it."""
    try:
        client.start(timeout=seconds)
    except Exception:  # kazoo's time-out; start() has stopped the client
        return True
    client.stop()
    client.close()
    return False


def scenario_tls(c, hosts, zk):
    base = "/kazoo-tls"
    zk.create(base, b"v0", acl=[ACL(Permissions.ALL, Id("x509", ALICE_DN))])
    acls, _ = zk.get_acls(base)
    c.equal([(a.perms, a.id.scheme, a.id.id) for a in acls], [(31, "x509", ALICE_DN)],
            "the node has alice's x509 ACL")
    zk.set(base, b"v1")
    c.equal(zk.get(base)[0], b"v1", "alice reads her node over TLS")
    zk.create(base + "/child", b"c")
    c.equal(zk.get_children(base), ["child"], "alice lists the children")
    zk.delete(base + "/child")
    refused = (("a certificate from another CA", tls_client(hosts, "mallory")),
               ("an expired certificate", tls_client(hosts, "expired")),
               ("a plaintext client on the TLS port", KazooClient(hosts=hosts, timeout=10.0)))
    for who, client in refused:
        c.check(gets_no_session(client), f"{who} gets no session")
        c.equal(zk.get(base)[0], b"v1", f"alice is still served after {who}")
    bob = tls_client(hosts, "bob")
    bob.start(timeout=WAIT)
    try:
        c.check(bob.connected, "bob connects over TLS afterwards")
        c.raises(NoAuthError, lambda: bob.get(base), "bob reading alice's node")
    finally:
        bob.stop()
        bob.close()
    zk.delete(base)


def sasl_client(hosts, password):
    """A client (not started) logging in with DIGEST-MD5 as bob."""
    return KazooClient(hosts=hosts, timeout=10.0, sasl_options={
        "mechanism": "DIGEST-MD5", "username": "bob", "password": password})


def connect_sasl(hosts):
    client = sasl_client(hosts, "bobsecret")
    client.start(timeout=WAIT)
    return client


def create_auth_node(c, zk, base, data, name, identity, reads):
    """Create base with the auth ACL through zk, logged in with SASL as
    name, and check that the ACL names that identity and that zk reads it;
    identity and reads label the two checks."""
    zk.create(base, data, acl=[ACL(Permissions.ALL, Id("auth", ""))])
    acls, _ = zk.get_acls(base)
    c.equal([(a.perms, a.id.scheme, a.id.id) for a in acls], [(31, "sasl", name)],
            f"the auth ACL expands to {identity}")
    c.equal(zk.get(base)[0], data, reads)


def scenario_sasl(c, hosts, zk):
    base = "/kazoo-sasl"
    create_auth_node(c, zk, base, b"secret", "bob", "bob's sasl identity", "bob reads the node")
    anon = connect(hosts)
    bad = sasl_client(hosts, "wrong")
    try:
        c.raises(NoAuthError, lambda: anon.get(base), "an anonymous read")
        # kazoo passes AUTH_FAILED on to CLOSED at once: record the states.
        states = []
        session_callback = bad._session_callback

        def record(state):
            states.append(state)
            session_callback(state)
        bad._session_callback = record
        bad.start_async()
        c.check(wait_until(lambda: KeeperState.AUTH_FAILED in states),
                "a wrong password gets AUTH_FAILED", f"states {states}")
        c.check(wait_until(lambda: not bad.connected), "and the client stays disconnected")
        c.equal(zk.get(base)[0], b"secret", "bob is still served afterwards")
        c.check(anon.exists("/") is not None, "and so is the anonymous client")
    finally:
        for client in (anon, bad):
            client.stop()
            client.close()
    zk.delete(base)


def scenario_nosasl(c, hosts, zk):
    """kazoo/nosasl runs against the runner's server without a SASL login.
    A server without one answers every sasl request with an empty OK, and
    kazoo's DIGEST-MD5 client, given nothing to answer, asks again and
    again; those requests do not keep its session alive, so the session
    expires by its timeout (4 s), the server closes the connection, and
    kazoo reports AUTH_FAILED and stops connecting."""
    base = "/kazoo-nosasl"
    zk.create(base, b"v")
    client = KazooClient(hosts=hosts, timeout=4.0, sasl_options={
        "mechanism": "DIGEST-MD5", "username": "bob", "password": "bobsecret"})
    states = []
    session_callback = client._session_callback

    def record(state):
        states.append(state)
        session_callback(state)
    client._session_callback = record
    try:
        client.start_async()
        c.check(wait_until(lambda: KeeperState.AUTH_FAILED in states),
                "a SASL login without a server login gets AUTH_FAILED", f"states {states}")
        c.check(wait_until(lambda: client._connection.connection_stopped.is_set()),
                "and the client stops connecting")
        c.check(not client.connected, "and stays disconnected")
        c.equal(zk.get(base)[0], b"v", "the plain client is still served")
    finally:
        client.stop()
        client.close()
    zk.delete(base)


def connect_gssapi(hosts):
    client = KazooClient(hosts=hosts, timeout=10.0, sasl_options={"mechanism": "GSSAPI"})
    client.start(timeout=WAIT)
    return client


def scenario_kerberos(c, hosts, zk):
    """GSSAPI through puresasl and python3-kerberos with the ticket cache of
    KRB5CCNAME (test/kerberos_test.go: client@EXAMPLE.TEST, the server drops
    the realm; HOSTS names localhost, so the ticket is for
    zookeeper/localhost)."""
    base = "/kazoo-kerberos"
    create_auth_node(c, zk, base, b"k", "client", "the Kerberos identity", "the client reads its node")
    anon = connect(hosts)
    try:
        c.raises(NoAuthError, lambda: anon.get(base), "an anonymous read")
    finally:
        anon.stop()
        anon.close()
    zk.delete(base)


# Scenarios whose first client is not the plain anonymous one.
CONNECTORS = {"tls": connect_tls, "sasl": connect_sasl, "kerberos": connect_gssapi}


SCENARIOS = {name[len("scenario_"):].replace("_", "-"): fn for name, fn in globals().items()
             if name.startswith("scenario_")}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in SCENARIOS:
        print(f"usage: {sys.argv[0]} HOSTS {{{'|'.join(sorted(SCENARIOS))}}}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    hosts, name = sys.argv[1], sys.argv[2]
    checks = Checks()
    zk = CONNECTORS.get(name, connect)(hosts)
    try:
        SCENARIOS[name](checks, hosts, zk)
    except Exception as err:  # an unexpected error is a failed check
        checks.check(False, "scenario ran to the end", f"{type(err).__name__}: {err}")
    finally:
        zk.stop()
        zk.close()
    print(f"{name}: {checks.failed} failed check(s)")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
