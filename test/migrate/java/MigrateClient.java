// The Curator client of the migration proof (test/migrate): it holds an
// ephemeral node, an InterProcessMutex, a LeaderLatch and a persistent
// recursive watch, and writes at a steady rate, while the ensemble under it
// is mirrored and taken over. It prints one JSON object per line on stdout
// for every event; the Go driver checks them (events.go, check.go).
//
//   java -cp <classes>:<jars> MigrateClient CONNECT_STRING NAME BASE SESSION_MS INTERVAL_MS
//
// A prober checks that the session reads its own writes (probeLoop).
// It runs until its stdin closes, then prints a "final" line with what it
// still holds and exits 0. Writes go through the raw ZooKeeper handle, not
// Curator's retrying API: a write the client never resends is acknowledged
// at most once by a correct server, so a value found twice in the tree is a
// server's fault, not the client's.

import java.io.InputStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.SessionConnectionStateErrorPolicy;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.ClientCnxn;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

public final class MigrateClient {
    private final String name;
    private final String base;
    private final long intervalMs;
    private final CuratorFramework curator;
    private final AtomicBoolean stopping = new AtomicBoolean();
    private boolean done; // no lines after the final one; guarded by this
    private InterProcessMutex mutex;
    private LeaderLatch latch;
    private String ephemeral;

    private MigrateClient(String connect, String name, String base, int sessionMs, long intervalMs) {
        this.name = name;
        this.base = base;
        this.intervalMs = intervalMs;
        // Curator's own operations (the recipes) retry without end; the
        // session timeout, not the retry policy, decides whether they last.
        this.curator = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(sessionMs)
                .retryPolicy(new RetryNTimes(Integer.MAX_VALUE, 100))
                // Only a lost session is an error for the recipes: the
                // latch keeps its leadership through a disconnection, as
                // an application that wants to survive one configures it.
                .connectionStateErrorPolicy(new SessionConnectionStateErrorPolicy())
                .build();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: MigrateClient CONNECT_STRING NAME BASE SESSION_MS INTERVAL_MS");
            System.exit(2);
        }
        MigrateClient c = new MigrateClient(args[0], args[1], args[2], Integer.parseInt(args[3]), Long.parseLong(args[4]));
        try {
            c.run();
        } catch (Exception e) {
            c.emit("error", "msg", "fatal: " + e);
            System.out.flush();
            System.exit(1);
        }
        System.out.flush();
        System.exit(0);
    }

    private void run() throws Exception {
        curator.getConnectionStateListenable().addListener((cl, state) -> emit("state", "state", state.name()));
        curator.start();
        if (!curator.blockUntilConnected(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not connected within 60 s");
        }
        emit("start", "session", hex(zk().getSessionId()));
        String writes = base + "/w/" + name;
        curator.create().orSetData().creatingParentsIfNeeded().forPath(writes);
        holdRecipes();
        // The persistent recursive watch covers every writer's directory.
        curator.watchers().add().withMode(AddWatchMode.PERSISTENT_RECURSIVE)
                .usingWatcher((Watcher) this::watched).forPath(base + "/w");
        emit("watching", "path", base + "/w");

        Thread writer = new Thread(() -> writeLoop(writes), "writer");
        writer.start();
        String probe = base + "/probe/" + name;
        curator.create().orSetData().creatingParentsIfNeeded().forPath(probe);
        Thread prober = new Thread(() -> probeLoop(probe), "prober");
        prober.setDaemon(true);
        prober.start();
        Thread holder = new Thread(this::reportLoop, "holder");
        holder.setDaemon(true);
        holder.start();

        InputStream in = System.in;
        byte[] buf = new byte[256];
        while (in.read(buf) >= 0) {
            // stdin stays open while the driver wants the client running
        }
        stopping.set(true);
        writer.join(10_000);
        report("final");
        synchronized (this) {
            done = true;
        }
        curator.close();
    }

    private ZooKeeper zk() throws Exception {
        return curator.getZookeeperClient().getZooKeeper();
    }

    private void holdRecipes() throws Exception {
        ephemeral = base + "/eph/" + name;
        curator.create().creatingParentsIfNeeded().withMode(CreateMode.EPHEMERAL)
                .forPath(ephemeral, name.getBytes(StandardCharsets.UTF_8));
        emit("ephemeral", "path", ephemeral);

        mutex = new InterProcessMutex(curator, base + "/lock/" + name);
        mutex.acquire();
        emit("lock", "state", "acquired");

        latch = new LeaderLatch(curator, base + "/leader/" + name, name);
        latch.addListener(new LeaderLatchListener() {
            public void isLeader() { emit("leader", "state", "gained"); }
            public void notLeader() { emit("leader", "state", "lost"); }
        });
        latch.start();
        if (!latch.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no leadership within 60 s");
        }
    }

    private void watched(WatchedEvent e) {
        if (e.getType() == Watcher.Event.EventType.None) {
            emit("zkstate", "state", e.getState().name());
            return;
        }
        emit("watch", "path", e.getPath(), "type", e.getType().name());
    }

    // writeLoop creates one persistent sequential node per tick, each with a
    // value used once, and prints each acknowledgement with the node's czxid.
    private void writeLoop(String dir) {
        long seq = 0;
        while (!stopping.get()) {
            long started = System.currentTimeMillis();
            seq++;
            String value = name + ":" + seq;
            try {
                Stat stat = new Stat();
                String path = zk().create(dir + "/n-", value.getBytes(StandardCharsets.UTF_8),
                        ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT_SEQUENTIAL, stat);
                emit("ack", "path", path, "value", value, "zxid", stat.getCzxid(), "sent", started);
            } catch (KeeperException e) {
                emit("write_error", "value", value, "msg", e.code().name(), "sent", started);
            } catch (Exception e) {
                emit("write_error", "value", value, "msg", e.toString(), "sent", started);
            }
            long wait = intervalMs - (System.currentTimeMillis() - started);
            if (wait > 0) {
                try {
                    Thread.sleep(wait);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    // probeLoop checks that a session reads its own writes: it sends a
    // setData and, without waiting, a getData of the same node (nobody
    // else writes it); when both succeed the read must return the value
    // written, as requests of one session are answered in order.
    private void probeLoop(String path) {
        long n = 0;
        while (!stopping.get()) {
            n++;
            byte[] want = (name + ":probe:" + n).getBytes(StandardCharsets.UTF_8);
            CountDownLatch done = new CountDownLatch(2);
            int[] rcs = new int[2];
            byte[][] got = new byte[1][];
            long[] zxids = new long[2];
            try {
                ZooKeeper z = zk();
                z.setData(path, want, -1, (rc, p, ctx, stat) -> {
                    rcs[0] = rc;
                    zxids[0] = stat == null ? 0 : stat.getMzxid();
                    done.countDown();
                }, null);
                z.getData(path, false, (rc, p, ctx, data, stat) -> {
                    rcs[1] = rc;
                    got[0] = data;
                    zxids[1] = stat == null ? 0 : stat.getMzxid();
                    done.countDown();
                }, null);
                done.await(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                rcs[0] = -1; // nothing to check
            }
            if (done.getCount() == 0 && rcs[0] == 0 && rcs[1] == 0 && !Arrays.equals(want, got[0])) {
                emit("error", "msg", String.format("read-your-writes: setData of %s (mzxid 0x%x) then getData returned %s (mzxid 0x%x)",
                        new String(want, StandardCharsets.UTF_8), zxids[0],
                        got[0] == null ? "null" : new String(got[0], StandardCharsets.UTF_8), zxids[1]));
            }
            try {
                Thread.sleep(intervalMs);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private void reportLoop() {
        while (!stopping.get()) {
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                return;
            }
            report("held");
        }
    }

    // report prints what the client holds: the mutex and the leadership by
    // the recipes' own account, the ephemeral node and its owner as read now.
    private void report(String ev) {
        String owner = "";
        String err = "";
        try {
            Stat s = zk().exists(ephemeral, false);
            owner = s == null ? "none" : hex(s.getEphemeralOwner());
        } catch (Exception e) {
            err = e.toString();
        }
        String session = "";
        try {
            session = hex(zk().getSessionId());
        } catch (Exception e) {
            err = e.toString();
        }
        emit(ev, "session", session, "lock", mutex.isAcquiredInThisProcess(),
                "leader", latch.hasLeadership(), "ephemeral_owner", owner, "msg", err);
    }

    private long lastZxid() {
        try {
            Field f = ZooKeeper.class.getDeclaredField("cnxn");
            f.setAccessible(true);
            return ((ClientCnxn) f.get(zk())).getLastZxid();
        } catch (Exception e) {
            return -1;
        }
    }

    private static String hex(long v) {
        return "0x" + Long.toHexString(v);
    }

    // emit prints one JSON line: time, client, event, the client's last seen
    // zxid (read under the same lock, so the lines' zxids are in the order
    // the client saw them), then the pairs given.
    private synchronized void emit(String ev, Object... kv) {
        if (done) {
            return;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("t", System.currentTimeMillis());
        m.put("client", name);
        m.put("ev", ev);
        m.put("zxid_seen", lastZxid());
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (b.length() > 1) {
                b.append(',');
            }
            quote(b, e.getKey());
            b.append(':');
            Object v = e.getValue();
            if (v instanceof Number || v instanceof Boolean) {
                b.append(v);
            } else {
                quote(b, String.valueOf(v));
            }
        }
        System.out.println(b.append('}'));
        System.out.flush();
    }

    private static void quote(StringBuilder b, String s) {
        b.append('"');
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') {
                b.append('\\').append(ch);
            } else if (ch < 0x20) {
                b.append(String.format("\\u%04x", (int) ch));
            } else {
                b.append(ch);
            }
        }
        b.append('"');
    }
}
