"""The kazoo client of the migration proof (test/migrate).

It holds an ephemeral node, a Lock and an Election, watches the writers'
directories, and writes at a steady rate, while the ensemble under it is
mirrored and taken over. It prints one JSON object per line on stdout for
every event; the Go driver checks them (events.go, check.go).

    /usr/bin/python3 migrate_client.py CONNECT_STRING NAME BASE SESSION_MS INTERVAL_MS

It runs until its stdin closes, then prints a "final" line with what it
still holds and exits 0.

kazoo 2.8 (Debian 12) has no add_watch (persistent watches came in 2.9), so
the watch here is a ChildrenWatch per writer directory, which kazoo re-arms
after every event: each newly listed child is reported as a "watch" line of
type ChildListed.
"""

import json
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException


class Client:
    def __init__(self, connect, name, base, session_ms, interval_ms):
        self.name = name
        self.base = base
        self.interval = interval_ms / 1000.0
        self.out_lock = threading.Lock()
        self.stopping = threading.Event()
        self.released = threading.Event()  # set after the final line
        self.done = False  # no lines after the final one
        self.leader = False
        self.lock_held = False
        self.seen = {}
        self.zk = KazooClient(
            hosts=connect,
            timeout=session_ms / 1000.0,
            connection_retry=dict(max_tries=-1, delay=0.1, backoff=1.5, max_delay=1.0),
        )
        self.ephemeral = base + "/eph/" + name

    def emit(self, ev, **kv):
        with self.out_lock:
            if self.done:
                return
            line = {"t": int(time.time() * 1000), "client": self.name, "ev": ev,
                    "zxid_seen": self.zk.last_zxid}
            line.update(kv)
            sys.stdout.write(json.dumps(line) + "\n")
            sys.stdout.flush()

    def session(self):
        # the session id kazoo keeps while it reconnects (client_id is
        # None while disconnected)
        sid = self.zk._session_id
        return "0x%x" % sid if sid else ""

    def run(self):
        self.zk.add_listener(lambda state: self.emit("state", state=str(state)))
        self.zk.start(timeout=60)
        self.emit("start", session=self.session())
        writes = self.base + "/w/" + self.name
        for who in ("curator", self.name):
            self.zk.ensure_path(self.base + "/w/" + who)
        self.hold_recipes()
        for who in ("curator", self.name):
            self.watch(self.base + "/w/" + who)
        writer = threading.Thread(target=self.write_loop, args=(writes,), daemon=True)
        writer.start()
        probe = self.base + "/probe/" + self.name
        self.zk.ensure_path(probe)
        threading.Thread(target=self.probe_loop, args=(probe,), daemon=True).start()
        threading.Thread(target=self.report_loop, daemon=True).start()
        for _ in sys.stdin:
            pass
        self.stopping.set()
        writer.join(10)
        # A children watch lists a new child one getChildren after its
        # event: let the listings of the last writes arrive.
        time.sleep(1.0)
        self.report("final")
        with self.out_lock:
            self.done = True
        self.released.set()
        self.zk.stop()
        self.zk.close()

    def hold_recipes(self):
        self.zk.create(self.ephemeral, self.name.encode(), ephemeral=True, makepath=True)
        self.emit("ephemeral", path=self.ephemeral)
        lock = self.zk.Lock(self.base + "/lock/" + self.name, self.name)
        if not lock.acquire(timeout=60):
            raise RuntimeError("no lock within 60 s")
        self.lock_held = True
        self.lock = lock
        self.emit("lock", state="acquired")
        gained = threading.Event()
        election = self.zk.Election(self.base + "/leader/" + self.name, self.name)

        def lead():
            self.leader = True
            self.emit("leader", state="gained")
            gained.set()
            self.released.wait()

        def contend():
            try:
                election.run(lead)
            except Exception as e:  # reported, then the check finds leadership lost
                self.emit("error", msg="election: %r" % e)
            if self.leader and not self.released.is_set():
                self.emit("leader", state="lost")
            self.leader = False

        threading.Thread(target=contend, daemon=True).start()
        if not gained.wait(60):
            raise RuntimeError("no leadership within 60 s")

    def watch(self, path):
        known = self.seen.setdefault(path, set())

        def children(names):
            for n in sorted(set(names) - known):
                known.add(n)
                self.emit("watch", path=path + "/" + n, type="ChildListed")

        self.zk.ChildrenWatch(path, children)
        self.emit("watching", path=path)

    def write_loop(self, d):
        seq = 0
        while not self.stopping.is_set():
            started = time.time()
            sent = int(started * 1000)
            seq += 1
            value = "%s:%d" % (self.name, seq)
            try:
                path, stat = self.zk.create(d + "/n-", value.encode(), sequence=True, include_data=True)
                self.emit("ack", path=path, value=value, zxid=stat.czxid, sent=sent)
            except KazooException as e:
                self.emit("write_error", value=value, msg=type(e).__name__, sent=sent)
            except Exception as e:
                self.emit("write_error", value=value, msg=repr(e), sent=sent)
            wait = self.interval - (time.time() - started)
            if wait > 0:
                time.sleep(wait)

    def probe_loop(self, path):
        """Checks that the session reads its own writes: a set and, without
        waiting, a get of the same node (nobody else writes it); when both
        succeed the get must return the value set."""
        n = 0
        while not self.stopping.is_set():
            n += 1
            want = ("%s:probe:%d" % (self.name, n)).encode()
            try:
                wrote = self.zk.set_async(path, want)
                read = self.zk.get_async(path)
                stat = wrote.get(timeout=30)
                got, gstat = read.get(timeout=30)
            except Exception:
                got = want  # one of them failed: nothing to check
            if got != want:
                self.emit("error", msg="read-your-writes: set of %s (mzxid 0x%x) then get returned %r (mzxid 0x%x)"
                          % (want.decode(), stat.mzxid, got, gstat.mzxid))
            time.sleep(self.interval)

    def report_loop(self):
        while not self.stopping.wait(1.0):
            self.report("held")

    def report(self, ev):
        owner, err = "", ""
        try:
            st = self.zk.exists(self.ephemeral)
            owner = "none" if st is None else "0x%x" % st.ephemeralOwner
        except Exception as e:
            err = repr(e)
        self.lock_held = self.lock_held and self.lock.is_acquired
        self.emit(ev, session=self.session(), lock=self.lock_held, leader=self.leader,
                  ephemeral_owner=owner, msg=err)


def main():
    if len(sys.argv) != 6:
        sys.stderr.write("usage: migrate_client.py CONNECT_STRING NAME BASE SESSION_MS INTERVAL_MS\n")
        sys.exit(2)
    c = Client(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    try:
        c.run()
    except Exception as e:
        c.emit("error", msg="fatal: %r" % e)
        sys.exit(1)


if __name__ == "__main__":
    main()
