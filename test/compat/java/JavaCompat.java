// Java client scenarios for the compatibility suite: the plain ZooKeeper 3.8
// client API (sessions, setWatches after a reconnect, multiRead, ...) and the
// Curator 5 recipes, both from Debian's jars.
//
//   java -cp <classes>:<jars> JavaCompat CONNECT_STRING SCENARIO
//
// Each scenario works under its own top-level node (/java-... or /curator-...),
// prints one line per check ("ok ..." or "FAIL ...") and only values that
// are the same on every compatible server, so the runner can compare two
// servers' transcripts. Exit status 0 only if every check passed. Every wait
// is bounded.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.AddWatchMode;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;

public final class JavaCompat {
    private static final long WAIT_MS = 15_000;
    // Reaping takes at most two check intervals per level (1 s in the suite).
    private static final long REAP_MS = 8_000;

    private final String connect;
    private final List<CuratorFramework> clients = new ArrayList<>();
    private int failed;

    private JavaCompat(String connect) {
        this.connect = connect;
    }

    public static void main(String[] args) throws Exception {
        Map<String, Scenario> all = scenarios();
        if (args.length != 2 || !all.containsKey(args[1])) {
            System.err.println("usage: JavaCompat CONNECT " + all.keySet());
            System.exit(2);
        }
        JavaCompat c = new JavaCompat(args[0]);
        try {
            all.get(args[1]).run(c);
        } catch (Exception e) {
            c.check(false, "scenario ran to the end", e.toString());
        } finally {
            c.closeAll();
        }
        System.out.println(args[1] + ": " + c.failed + " failed check(s)");
        System.out.flush();
        // Curator and ZooKeeper leave non-daemon threads behind.
        System.exit(c.failed == 0 ? 0 : 1);
    }

    interface Scenario {
        void run(JavaCompat c) throws Exception;
    }

    private static Map<String, Scenario> scenarios() {
        Map<String, Scenario> m = new TreeMap<>();
        m.put("mutex", JavaCompat::mutex);
        m.put("rwlock", JavaCompat::rwlock);
        m.put("leaderlatch", JavaCompat::leaderLatch);
        m.put("leaderselector", JavaCompat::leaderSelector);
        m.put("queue", JavaCompat::queue);
        m.put("doublebarrier", JavaCompat::doubleBarrier);
        m.put("sharedcount", JavaCompat::sharedCount);
        m.put("curatorcache", JavaCompat::curatorCache);
        m.put("persistentnode", JavaCompat::persistentNode);
        m.put("persistentttlnode", JavaCompat::persistentTtlNode);
        m.put("containers", JavaCompat::containers);
        m.put("session-resume", JavaCompat::sessionResume);
        m.put("session-expiry", JavaCompat::sessionExpiry);
        m.put("api", JavaCompat::api);
        m.put("sasl", JavaCompat::sasl);
        m.put("tls", JavaCompat::tls);
        m.put("kerberos", JavaCompat::kerberos);
        m.put("ensemble-kill-leader", c -> c.ensembleKill(true));
        m.put("ensemble-kill-follower", c -> c.ensembleKill(false));
        m.put("ensemble-readonly", JavaCompat::ensembleReadOnly);
        // The leader's SIGKILL and restart with TLS between the members.
        m.put("ensemble-quorumtls", c -> c.ensembleKill(true));
        m.put("ensemble-quorum-loss", JavaCompat::ensembleQuorumLoss);
        return m;
    }

    // --- helpers ---------------------------------------------------------

    private boolean check(boolean cond, String what, String detail) {
        if (cond) {
            System.out.println("ok   " + what);
        } else {
            failed++;
            System.out.println("FAIL " + what + (detail.isEmpty() ? "" : "  (" + detail + ")"));
        }
        System.out.flush();
        return cond;
    }

    private boolean check(boolean cond, String what) {
        return check(cond, what, "");
    }

    private boolean equal(Object got, Object want, String what) {
        return check(want.equals(got), what + " = " + want, "got " + got);
    }

    private CuratorFramework client() throws InterruptedException {
        CuratorFramework cf = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        clients.add(cf);
        cf.start();
        if (!cf.blockUntilConnected((int) WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("no connection to " + connect);
        }
        return cf;
    }

    private void closeAll() {
        for (CuratorFramework cf : clients) {
            cf.close();
        }
    }

    private static boolean waitFor(BooleanSupplier cond) throws InterruptedException {
        return waitFor(cond, WAIT_MS);
    }

    private static boolean waitFor(BooleanSupplier cond, long ms) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }

    private static boolean exists(CuratorFramework cf, String path) {
        try {
            return cf.checkExists().forPath(path) != null;
        } catch (Exception e) {
            return false;
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static boolean joinAll(List<Thread> threads) throws InterruptedException {
        for (Thread t : threads) {
            t.join(2 * WAIT_MS);
        }
        for (Thread t : threads) {
            if (t.isAlive()) {
                return false;
            }
        }
        return true;
    }

    // --- scenarios ---------------------------------------------------------

    // Several clients x threads increment a counter under InterProcessMutex.
    private void mutex() throws Exception {
        String path = "/curator-mutex";
        int rounds = 10;
        int[] counter = {0};
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            CuratorFramework cf = client();
            for (int j = 0; j < 2; j++) {
                threads.add(new Thread(() -> {
                    InterProcessMutex lock = new InterProcessMutex(cf, path);
                    try {
                        for (int r = 0; r < rounds; r++) {
                            if (!lock.acquire(WAIT_MS, TimeUnit.MILLISECONDS)) {
                                errors.incrementAndGet();
                                continue;
                            }
                            try {
                                maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                                int v = counter[0];
                                Thread.sleep(1);
                                counter[0] = v + 1;
                                inside.decrementAndGet();
                            } finally {
                                lock.release();
                            }
                        }
                    } catch (Exception e) {
                        errors.incrementAndGet();
                    }
                }));
            }
        }
        threads.forEach(Thread::start);
        check(joinAll(threads), "all workers finished");
        equal(errors.get(), 0, "acquire errors");
        equal(counter[0], 4 * rounds, "counter guarded by the mutex");
        equal(maxInside.get(), 1, "at most one holder at a time");

        CuratorFramework a = clients.get(0);
        CuratorFramework b = clients.get(1);
        InterProcessMutex held = new InterProcessMutex(a, path);
        check(held.acquire(WAIT_MS, TimeUnit.MILLISECONDS), "acquire");
        check(held.acquire(WAIT_MS, TimeUnit.MILLISECONDS), "re-entrant acquire");
        equal(held.getParticipantNodes().size(), 1, "one participant node");
        InterProcessMutex other = new InterProcessMutex(b, path);
        check(!other.acquire(300, TimeUnit.MILLISECONDS), "another client times out while held");
        held.release();
        held.release();
        check(other.acquire(WAIT_MS, TimeUnit.MILLISECONDS), "another client acquires after release");
        other.release();
        // Curator makes the lock's parent a container: once empty the server reaps it.
        check(waitFor(() -> !exists(a, path), REAP_MS), "the emptied lock container is reaped");
    }

    private void rwlock() throws Exception {
        String path = "/curator-rwlock";
        CuratorFramework a = client();
        CuratorFramework b = client();
        InterProcessReadWriteLock la = new InterProcessReadWriteLock(a, path);
        InterProcessReadWriteLock lb = new InterProcessReadWriteLock(b, path);
        check(la.readLock().acquire(WAIT_MS, TimeUnit.MILLISECONDS), "reader 1 acquires");
        check(lb.readLock().acquire(WAIT_MS, TimeUnit.MILLISECONDS), "reader 2 acquires while reader 1 holds");
        InterProcessReadWriteLock lw = new InterProcessReadWriteLock(client(), path);
        check(!lw.writeLock().acquire(300, TimeUnit.MILLISECONDS), "writer waits while readers hold");
        la.readLock().release();
        lb.readLock().release();
        check(lw.writeLock().acquire(WAIT_MS, TimeUnit.MILLISECONDS), "writer acquires after readers release");
        check(lw.readLock().acquire(WAIT_MS, TimeUnit.MILLISECONDS), "the writer may also take the read lock");
        check(!la.readLock().acquire(300, TimeUnit.MILLISECONDS), "other readers wait while the writer holds");
        lw.readLock().release();
        lw.writeLock().release();
        check(la.readLock().acquire(WAIT_MS, TimeUnit.MILLISECONDS), "reader acquires after the writer releases");
        la.readLock().release();
    }

    private void leaderLatch() throws Exception {
        String path = "/curator-latch";
        List<LeaderLatch> latches = new ArrayList<>();
        List<CuratorFramework> owners = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            CuratorFramework cf = client();
            LeaderLatch l = new LeaderLatch(cf, path, "p" + i);
            l.start();
            latches.add(l);
            owners.add(cf);
        }
        check(waitFor(() -> latches.stream().filter(LeaderLatch::hasLeadership).count() == 1),
                "exactly one leader");
        LeaderLatch leader = latches.stream().filter(LeaderLatch::hasLeadership).findFirst().get();
        // The first latch may lead before the others have registered.
        check(waitFor(() -> participants(leader) == 3), "three participants");
        check(leader.getLeader().getId().equals(leader.getId()), "getLeader names the leader");
        int idx = latches.indexOf(leader);
        // Failover by closing the leader's whole client: its session closes and
        // its ephemeral latch node goes with it.
        owners.get(idx).close();
        clients.remove(owners.get(idx));
        List<LeaderLatch> rest = new ArrayList<>(latches);
        rest.remove(idx);
        check(waitFor(() -> rest.stream().filter(LeaderLatch::hasLeadership).count() == 1),
                "another participant takes over after the leader's session closed");
        LeaderLatch second = rest.stream().filter(LeaderLatch::hasLeadership).findFirst().get();
        second.close();
        rest.remove(second);
        check(rest.get(0).await(WAIT_MS, TimeUnit.MILLISECONDS), "the last participant takes over after close()");
        equal(rest.get(0).getParticipants().size(), 1, "participants at the end");
        rest.get(0).close();
    }

    private void leaderSelector() throws Exception {
        String path = "/curator-selector";
        BlockingQueue<String> leaders = new LinkedBlockingQueue<>();
        Map<String, CountDownLatch> release = new TreeMap<>();
        Map<String, CuratorFramework> owners = new TreeMap<>();
        List<LeaderSelector> selectors = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String id = "s" + i;
            CountDownLatch done = new CountDownLatch(1);
            release.put(id, done);
            CuratorFramework cf = client();
            owners.put(id, cf);
            LeaderSelector s = new LeaderSelector(cf, path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework client) throws Exception {
                    leaders.add(id);
                    done.await(2 * WAIT_MS, TimeUnit.MILLISECONDS);
                }
            });
            s.setId(id);
            selectors.add(s);
        }
        selectors.forEach(LeaderSelector::start);
        String first = leaders.poll(WAIT_MS, TimeUnit.MILLISECONDS);
        check(first != null, "a leader is selected");
        check(waitFor(() -> participants(selectors.get(0)) == 3), "three participants");
        // Failover 1: the leader gives up leadership (takeLeadership returns).
        release.get(first).countDown();
        String second = leaders.poll(WAIT_MS, TimeUnit.MILLISECONDS);
        check(second != null && !second.equals(first), "a new leader after the leader returned");
        // Failover 2: the leader's client closes.
        CuratorFramework cf = owners.get(second);
        cf.close();
        clients.remove(cf);
        String third = leaders.poll(WAIT_MS, TimeUnit.MILLISECONDS);
        check(third != null && !third.equals(first) && !third.equals(second),
                "a new leader after the leader's session closed");
        release.values().forEach(CountDownLatch::countDown);
        for (LeaderSelector s : selectors) {
            try {
                s.close();
            } catch (IllegalStateException alreadyClosed) {
                // its client was closed above
            }
        }
    }

    private static int participants(LeaderSelector s) {
        try {
            return s.getParticipants().size();
        } catch (Exception e) {
            return -1;
        }
    }

    private static int participants(LeaderLatch l) {
        try {
            return l.getParticipants().size();
        } catch (Exception e) {
            return -1;
        }
    }

    private void queue() throws Exception {
        String path = "/curator-queue";
        BlockingQueue<String> got = new LinkedBlockingQueue<>();
        QueueSerializer<String> ser = new QueueSerializer<String>() {
            @Override
            public byte[] serialize(String item) {
                return bytes(item);
            }

            @Override
            public String deserialize(byte[] b) {
                return new String(b, StandardCharsets.UTF_8);
            }
        };
        QueueConsumer<String> consumer = new QueueConsumer<String>() {
            @Override
            public void consumeMessage(String message) {
                got.add(message);
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState newState) {
            }
        };
        DistributedQueue<String> producer = QueueBuilder.builder(client(), null, ser, path).buildQueue();
        producer.start();
        for (int i = 0; i < 5; i++) {
            producer.put("item-" + i);
        }
        DistributedQueue<String> q = QueueBuilder.builder(client(), consumer, ser, path).buildQueue();
        q.start();
        List<String> items = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String s = got.poll(WAIT_MS, TimeUnit.MILLISECONDS);
            if (s == null) {
                break;
            }
            items.add(s);
        }
        equal(items, List.of("item-0", "item-1", "item-2", "item-3", "item-4"), "consumed in FIFO order");
        check(waitFor(() -> {
            try {
                return clients.get(0).getChildren().forPath(path).isEmpty();
            } catch (Exception e) {
                return false;
            }
        }), "queue nodes removed after consumption");
        q.close();
        producer.close();
    }

    private void doubleBarrier() throws Exception {
        String path = "/curator-dbarrier";
        int members = 3;
        List<String> entered = new CopyOnWriteArrayList<>();
        List<String> left = new CopyOnWriteArrayList<>();
        AtomicInteger errors = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            CuratorFramework cf = client();
            String id = "m" + i;
            threads.add(new Thread(() -> {
                DistributedDoubleBarrier b = new DistributedDoubleBarrier(cf, path, members);
                try {
                    if (!b.enter(WAIT_MS, TimeUnit.MILLISECONDS)) {
                        errors.incrementAndGet();
                        return;
                    }
                    entered.add(id);
                    if (!b.leave(WAIT_MS, TimeUnit.MILLISECONDS)) {
                        errors.incrementAndGet();
                        return;
                    }
                    left.add(id);
                } catch (Exception e) {
                    errors.incrementAndGet();
                }
            }));
        }
        DistributedDoubleBarrier alone = new DistributedDoubleBarrier(clients.get(0), path + "-alone", members);
        check(!alone.enter(300, TimeUnit.MILLISECONDS), "one member alone times out on enter");
        threads.forEach(Thread::start);
        check(joinAll(threads), "all members finished");
        equal(errors.get(), 0, "enter/leave errors or timeouts");
        List<String> e = new ArrayList<>(entered);
        List<String> l = new ArrayList<>(left);
        Collections.sort(e);
        Collections.sort(l);
        equal(e, List.of("m0", "m1", "m2"), "entered");
        equal(l, List.of("m0", "m1", "m2"), "left");
    }

    private void sharedCount() throws Exception {
        String path = "/curator-count";
        SharedCount a = new SharedCount(client(), path, 10);
        SharedCount b = new SharedCount(client(), path, 99);
        BlockingQueue<Integer> seen = new LinkedBlockingQueue<>();
        a.start();
        b.start();
        b.addListener(new SharedCountListener() {
            @Override
            public void countHasChanged(org.apache.curator.framework.recipes.shared.SharedCountReader r, int n) {
                seen.add(n);
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState newState) {
            }
        });
        equal(b.getCount(), 10, "the first seed wins");
        a.setCount(11);
        equal(seen.poll(WAIT_MS, TimeUnit.MILLISECONDS), 11, "listener sees setCount");
        check(waitFor(() -> b.getCount() == 11), "other client sees the new count");
        VersionedValue<Integer> v = a.getVersionedValue();
        check(a.trySetCount(v, 12), "trySetCount with the current version");
        check(!a.trySetCount(v, 13), "trySetCount with a stale version fails");
        check(waitFor(() -> a.getCount() == 12 && b.getCount() == 12), "both see 12");
        a.close();
        b.close();
    }

    private void curatorCache() throws Exception {
        String path = "/curator-cache";
        CuratorFramework cf = client();
        cf.create().forPath(path, bytes("root"));
        cf.create().forPath(path + "/pre", bytes("p"));
        List<String> events = new CopyOnWriteArrayList<>();
        CountDownLatch initialized = new CountDownLatch(1);
        CuratorCache cache = CuratorCache.build(cf, path);
        cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(d -> events.add("create " + d.getPath() + " " + new String(d.getData(), StandardCharsets.UTF_8)))
                .forChanges((o, n) -> events.add("change " + n.getPath() + " " + new String(n.getData(), StandardCharsets.UTF_8)))
                .forDeletes(d -> events.add("delete " + d.getPath()))
                .forInitialized(initialized::countDown)
                .build());
        cache.start();
        check(initialized.await(WAIT_MS, TimeUnit.MILLISECONDS), "initialized");
        check(cache.get(path + "/pre").isPresent(), "existing node cached");
        CuratorFramework writer = client();
        // Each step waits until the cache has seen the previous one: with no
        // wait, the cache may fetch /a after setData (on either server) and
        // then rightly report no change.
        writer.create().forPath(path + "/a", bytes("1"));
        check(waitFor(() -> events.contains("create " + path + "/a 1")), "cache saw /a created");
        writer.create().forPath(path + "/a/b", bytes("2"));
        check(waitFor(() -> events.contains("create " + path + "/a/b 2")), "cache saw /a/b created");
        writer.setData().forPath(path + "/a", bytes("3"));
        check(waitFor(() -> events.contains("change " + path + "/a 3")), "cache saw /a change");
        writer.delete().forPath(path + "/a/b");
        List<String> want = List.of("create " + path + "/a 1", "create " + path + "/a/b 2",
                "change " + path + "/a 3", "delete " + path + "/a/b");
        check(waitFor(() -> events.containsAll(want)), "events for create, nested create, change, delete",
                "got " + events);
        List<String> after = new ArrayList<>(events.subList(events.indexOf(want.get(0)), events.size()));
        equal(after, want, "events after initialization, in order");
        equal(new String(cache.get(path + "/a").get().getData(), StandardCharsets.UTF_8), "3", "cached data");
        check(cache.get(path + "/a/b").isEmpty(), "deleted node left the cache");
        cache.close();
    }

    private void persistentNode() throws Exception {
        String path = "/curator-pnode";
        CuratorFramework cf = client();
        cf.create().forPath(path);
        PersistentNode node = new PersistentNode(cf, CreateMode.EPHEMERAL, false, path + "/me", bytes("hello"));
        node.start();
        check(node.waitForInitialCreate(WAIT_MS, TimeUnit.MILLISECONDS), "initial create");
        CuratorFramework other = client();
        Stat st = other.checkExists().forPath(path + "/me");
        check(st != null && st.getEphemeralOwner() == cf.getZookeeperClient().getZooKeeper().getSessionId(),
                "node is an ephemeral of the owner's session");
        // Someone deletes it: the recipe recreates it.
        other.delete().forPath(path + "/me");
        check(waitFor(() -> exists(other, path + "/me")), "recreated after a delete");
        node.setData(bytes("bye"));
        check(waitFor(() -> {
            try {
                return new String(other.getData().forPath(path + "/me"), StandardCharsets.UTF_8).equals("bye");
            } catch (Exception e) {
                return false;
            }
        }), "setData reaches the node");
        PersistentNode seq = new PersistentNode(cf, CreateMode.EPHEMERAL_SEQUENTIAL, false, path + "/seq-", bytes(""));
        seq.start();
        check(seq.waitForInitialCreate(WAIT_MS, TimeUnit.MILLISECONDS), "sequential initial create");
        equal(seq.getActualPath(), path + "/seq-0000000002", "sequential name (two creations of /me came first)");
        seq.close();
        node.close();
        check(waitFor(() -> !exists(other, path + "/me")), "close deletes the node");
    }

    // Needs extendedTypesEnabled (TTL) and the container/TTL reaper
    // (znode.container.checkIntervalMs is short in the suite's config).
    private void persistentTtlNode() throws Exception {
        String path = "/curator-ttl/node";
        CuratorFramework cf = client();
        PersistentTtlNode node = new PersistentTtlNode(cf, path, 1000, bytes("ttl"));
        node.start();
        check(node.waitForInitialCreate(WAIT_MS, TimeUnit.MILLISECONDS), "initial create");
        Stat st = cf.checkExists().forPath(path);
        check(st != null && st.getEphemeralOwner() == 0, "the node is a container (ephemeralOwner 0)");
        check(waitFor(() -> exists(cf, path + "/touch")), "the TTL touch child exists");
        equal(new String(cf.getData().forPath(path), StandardCharsets.UTF_8), "ttl", "data");
        // The touch node is refreshed while the recipe runs: still there after 2 TTLs.
        Thread.sleep(2500);
        check(exists(cf, path), "alive while the recipe touches it");
        node.close();
        check(waitFor(() -> !exists(cf, path + "/touch"), REAP_MS), "the TTL child is reaped after close");
        check(waitFor(() -> !exists(cf, path), REAP_MS), "the emptied container is reaped");
    }

    private void containers() throws Exception {
        String base = "/curator-cont";
        CuratorFramework cf = client();
        cf.create().creatingParentContainersIfNeeded().forPath(base + "/a/b/leaf", bytes("x"));
        check(exists(cf, base + "/a/b/leaf"), "created with container parents");
        Stat st = cf.checkExists().forPath(base + "/a/b");
        check(st != null && st.getEphemeralOwner() == 0 && st.getNumChildren() == 1, "parent stat");
        cf.create().creatingParentContainersIfNeeded().withMode(CreateMode.EPHEMERAL).forPath(base + "/e/leaf");
        check(exists(cf, base + "/e/leaf"), "ephemeral under container parents");
        cf.create().forPath(base + "/plain");
        cf.create().creatingParentContainersIfNeeded().forPath(base + "/c2");
        // Reaping: a container that had a child and is now empty is deleted by
        // the server (ZooKeeper: every znode.container.checkIntervalMs).
        cf.delete().forPath(base + "/a/b/leaf");
        check(waitFor(() -> !exists(cf, base + "/a/b"), REAP_MS), "an emptied container is reaped");
        check(waitFor(() -> !exists(cf, base + "/a"), REAP_MS), "its emptied container parent is reaped next");
        check(exists(cf, base + "/plain"), "a persistent node is not reaped");
        check(exists(cf, base + "/e/leaf"), "a container with a child is not reaped");
    }

    // --- plain ZooKeeper client -------------------------------------------

    // A ZooKeeper handle whose watch events (default watcher) are queued as
    // "State Type path" strings.
    private final class Handle implements Watcher {
        final BlockingQueue<String> events = new LinkedBlockingQueue<>();
        final List<String> seen = new CopyOnWriteArrayList<>(); // every event, in order
        final ZooKeeper zk;

        Handle(String connect, int timeoutMs) throws Exception {
            this(connect, timeoutMs, false);
            check(awaitEvent("SyncConnected None null") != null, "connected to the server");
        }

        // A handle with a client configuration, not waiting for its connection.
        Handle(String connect, int timeoutMs, ZKClientConfig config) throws IOException {
            zk = new ZooKeeper(connect, timeoutMs, this, config);
        }

        // A handle that has not waited for its connection yet.
        Handle(String connect, int timeoutMs, boolean canBeReadOnly) throws IOException {
            zk = new ZooKeeper(connect, timeoutMs, this, canBeReadOnly);
        }

        @Override
        public void process(WatchedEvent e) {
            String s = e.getState() + " " + e.getType() + " " + e.getPath();
            seen.add(s);
            events.add(s);
        }

        // awaitEvent drops other events until want arrives (or the wait ends).
        String awaitEvent(String want) throws InterruptedException {
            return awaitEvent(want, WAIT_MS);
        }

        String awaitEvent(String want, long ms) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
            while (true) {
                long left = deadline - System.nanoTime();
                String e = events.poll(Math.max(left, 0), TimeUnit.NANOSECONDS);
                if (e == null || e.equals(want)) {
                    return e;
                }
            }
        }

        // drain returns the events that arrive within ms, in order.
        List<String> drain(long ms) throws InterruptedException {
            List<String> out = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
            while (true) {
                long left = deadline - System.nanoTime();
                String e = events.poll(Math.max(left, 0), TimeUnit.NANOSECONDS);
                if (e == null) {
                    return out;
                }
                out.add(e);
            }
        }

        void close() throws InterruptedException {
            zk.close();
        }
    }

    // Reconnect to the same session through a proxy that cut the connection:
    // the session, its ephemerals and its watches survive; watches are
    // re-registered with setWatches and the changes missed meanwhile fire.
    private void sessionResume() throws Exception {
        String base = "/java-resume";
        Handle direct = new Handle(connect, 10_000);
        direct.zk.create(base, null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        direct.zk.create(base + "/data", bytes("0"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        direct.zk.create(base + "/kids", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        direct.zk.create(base + "/gone", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        try (Proxy proxy = new Proxy(connect)) {
            Handle h = new Handle(proxy.address(), 10_000);
            long sid = h.zk.getSessionId();
            h.zk.create(base + "/eph", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
            h.zk.getData(base + "/data", true, null);
            h.zk.getChildren(base + "/kids", true);
            h.zk.exists(base + "/later", true);
            h.zk.getData(base + "/gone", true, null);
            h.zk.addWatch(base + "/rec", AddWatchMode.PERSISTENT_RECURSIVE);
            h.zk.addWatch(base + "/kids", AddWatchMode.PERSISTENT);

            proxy.refuse(true);
            proxy.cut();
            check(h.awaitEvent("Disconnected None null") != null, "client sees the disconnect");
            // Changes the client misses while it is away.
            direct.zk.setData(base + "/data", bytes("1"), -1);
            direct.zk.create(base + "/kids/k", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            direct.zk.create(base + "/later", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            direct.zk.delete(base + "/gone", -1);
            direct.zk.create(base + "/rec", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            check(direct.zk.exists(base + "/eph", false) != null, "the ephemeral survives the disconnect");
            proxy.refuse(false);

            check(h.awaitEvent("SyncConnected None null") != null, "client reconnects");
            equal(h.zk.getSessionId() == sid, true, "same session after the reconnect");
            // setWatches answers in list order: data, exist, child watches.
            List<String> missed = new ArrayList<>(h.drain(1500));
            Collections.sort(missed);
            equal(missed, List.of(
                    "SyncConnected NodeChildrenChanged " + base + "/kids",
                    "SyncConnected NodeCreated " + base + "/later",
                    "SyncConnected NodeDataChanged " + base + "/data",
                    "SyncConnected NodeDeleted " + base + "/gone"),
                    "missed changes fire after the reconnect (sorted)");
            direct.zk.create(base + "/rec/x", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            equal(h.awaitEvent("SyncConnected NodeCreated " + base + "/rec/x"),
                    "SyncConnected NodeCreated " + base + "/rec/x", "the recursive watch was re-armed");
            direct.zk.create(base + "/kids/k2", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            equal(h.awaitEvent("SyncConnected NodeChildrenChanged " + base + "/kids"),
                    "SyncConnected NodeChildrenChanged " + base + "/kids", "the persistent watch was re-armed");
            direct.zk.setData(base + "/data", bytes("2"), -1);
            equal(h.drain(500), List.of(), "one-shot watches that fired are not re-armed");
            h.close();
        }
        check(waitFor(() -> {
            try {
                return direct.zk.exists(base + "/eph", false) == null;
            } catch (Exception e) {
                return false;
            }
        }), "close removes the ephemeral");
        direct.close();
    }

    // A client cut off for longer than its session timeout: the server
    // expires the session, deletes its ephemeral and, when the client comes
    // back, tells it the session expired.
    private void sessionExpiry() throws Exception {
        String base = "/java-expiry";
        Handle direct = new Handle(connect, 10_000);
        direct.zk.create(base, null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        try (Proxy proxy = new Proxy(connect)) {
            Handle h = new Handle(proxy.address(), 4_000);
            equal(h.zk.getSessionTimeout(), 4000, "negotiated timeout (2 x tickTime minimum)");
            h.zk.create(base + "/eph", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
            direct.zk.exists(base + "/eph", true);
            proxy.refuse(true);
            proxy.cut();
            long cut = System.nanoTime();
            String deleted = direct.awaitEvent("SyncConnected NodeDeleted " + base + "/eph");
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cut);
            check(deleted != null, "the ephemeral is deleted when the session expires");
            // Expiry is checked per tick: between timeout - ping interval and
            // timeout + tickTime after the last packet.
            check(ms >= 1500 && ms <= 9000, "expiry time within the session timeout bounds", ms + " ms");
            proxy.refuse(false);
            check(h.awaitEvent("Expired None null") != null, "the client learns its session expired");
            h.close();
        }
        direct.close();
    }

    // Java API calls the recipes do not reach: multiRead, getEphemerals,
    // getAllChildrenNumber, whoAmI, create2 stats, TTL, system nodes.
    private void api() throws Exception {
        String base = "/java-api";
        Handle h = new Handle(connect, 10_000);
        ZooKeeper zk = h.zk;
        Stat st = new Stat();
        zk.create(base, bytes("r"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT, st);
        check(st.getCzxid() == st.getMzxid() && st.getCzxid() == st.getPzxid() && st.getDataLength() == 1,
                "create2 returns the new node's stat");
        zk.create(base + "/a", bytes("A"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        zk.create(base + "/a/b", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        zk.create(base + "/e1", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        zk.create(base + "/e1x", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        List<OpResult> rs = zk.multi(List.of(Op.getData(base + "/a"), Op.getChildren(base),
                Op.getData(base + "/missing"), Op.getChildren(base + "/a")));
        List<String> kinds = new ArrayList<>();
        for (OpResult r : rs) {
            if (r instanceof OpResult.GetDataResult) {
                kinds.add("data " + new String(((OpResult.GetDataResult) r).getData(), StandardCharsets.UTF_8));
            } else if (r instanceof OpResult.GetChildrenResult) {
                List<String> c = new ArrayList<>(((OpResult.GetChildrenResult) r).getChildren());
                Collections.sort(c);
                kinds.add("children " + c);
            } else if (r instanceof OpResult.ErrorResult) {
                kinds.add("error " + ((OpResult.ErrorResult) r).getErr());
            }
        }
        equal(kinds, List.of("data A", "children [a, e1, e1x]", "error -101", "children [b]"),
                "multiRead results (a failing read does not abort the others)");
        List<String> eph = new ArrayList<>(zk.getEphemerals(base + "/e1"));
        Collections.sort(eph);
        equal(eph, List.of(base + "/e1", base + "/e1x"), "getEphemerals matches by string prefix");
        equal(zk.getAllChildrenNumber(base), 4, "getAllChildrenNumber counts every descendant");
        List<String> who = new ArrayList<>();
        for (ClientInfo ci : zk.whoAmI()) {
            who.add(ci.getAuthScheme() + ":" + ci.getUser());
        }
        equal(who, List.of("ip:127.0.0.1"), "whoAmI");
        zk.addAuthInfo("digest", bytes("carol:pw"));
        who.clear();
        for (ClientInfo ci : zk.whoAmI()) {
            who.add(ci.getAuthScheme() + ":" + ci.getUser());
        }
        Collections.sort(who);
        equal(who, List.of("digest:carol", "ip:127.0.0.1"), "whoAmI after addauth (sorted)");

        Stat ttl = new Stat();
        zk.create(base + "/ttl", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT_WITH_TTL, ttl, 60_000);
        equal(ttl.getEphemeralOwner(), 0L, "TTL node ephemeralOwner as seen by clients");
        String seq = zk.create(base + "/ttlseq-", null, ZooDefs.Ids.OPEN_ACL_UNSAFE,
                CreateMode.PERSISTENT_SEQUENTIAL_WITH_TTL, null, 60_000);
        equal(seq, base + "/ttlseq-0000000004", "sequential TTL name");
        String cont = zk.create(base + "/cont", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.CONTAINER);
        equal(cont, base + "/cont", "container create");

        // Fresh-server values: no scenario before this one creates children
        // under /zookeeper (kazoo/precedence does, later).
        equal(statLine(zk.exists("/zookeeper", false)), "czxid=0 mzxid=0 pzxid=0 version=0 cversion=-2 aversion=0 owner=0 len=0 kids=2",
                "/zookeeper stat");
        equal(statLine(zk.exists("/zookeeper/config", false)), "czxid=0 mzxid=0 pzxid=0 version=0 cversion=0 aversion=-1 owner=0 len=0 kids=0",
                "/zookeeper/config stat (standalone)");
        equal(aclLine(zk.getACL("/zookeeper/config", null)), "[1 world:anyone]", "/zookeeper/config ACL");
        equal(aclLine(zk.getACL("/", null)), "[31 world:anyone]", "/ ACL");
        equal(code(() -> zk.setData("/zookeeper/config", bytes("x"), -1)), "NOAUTH", "write /zookeeper/config");
        equal(code(() -> zk.delete("/zookeeper", -1)), "BADARGUMENTS", "delete /zookeeper");
        equal(code(() -> zk.delete("/zookeeper/quota", -1)), "BADARGUMENTS", "delete /zookeeper/quota");
        equal(code(() -> zk.create(base + "/x", null, acl(new ACL(31, new Id("world", "me"))), CreateMode.PERSISTENT)),
                "INVALIDACL", "world ACL other than anyone");
        equal(code(() -> zk.create(base + "/x", null, acl(new ACL(31, new Id("ip", "10.0.0.0/33"))), CreateMode.PERSISTENT)),
                "INVALIDACL", "ip ACL with /33");
        equal(code(() -> zk.create(base + "/x", null, acl(new ACL(31, new Id("ip", "10.0.0.0/8"))), CreateMode.PERSISTENT)),
                "OK", "ip ACL with /8");
        equal(code(() -> zk.getData(base + "/x", false, null)), "NOAUTH", "read a node only 10/8 may read");
        equal(code(() -> zk.create(base + "/y", null, acl(new ACL(31, new Id("x509", "CN=me"))), CreateMode.PERSISTENT)),
                "INVALIDACL", "x509 ACL without a provider");
        equal(code(() -> zk.setACL(base + "/missing", acl(new ACL(31, new Id("world", "me"))), -1)),
                "INVALIDACL", "setACL: InvalidACL before NoNode");
        equal(code(() -> zk.removeWatches(base, h, Watcher.WatcherType.Any, false)), "NOWATCHER", "removeWatches with no watch");
        CountDownLatch synced = new CountDownLatch(1);
        String[] syncPath = new String[1];
        zk.sync(base + "/nowhere", (rc, path, ctx) -> {
            syncPath[0] = rc + " " + path;
            synced.countDown();
        }, null);
        check(synced.await(WAIT_MS, TimeUnit.MILLISECONDS), "sync completes");
        equal(syncPath[0], "0 " + base + "/nowhere", "sync echoes the path");
        h.close();
    }

    // --- SASL ------------------------------------------------------------

    // sasl logs in with DIGEST-MD5 as user bob (the runner's server JAAS
    // file lists bob and super), uses a sasl:bob ACL, and checks that an
    // anonymous client is refused and a wrong password gets AuthFailed.
    private void sasl() throws Exception {
        java.nio.file.Path jaas = java.nio.file.Files.createTempFile("compat-jaas", ".conf");
        java.nio.file.Files.writeString(jaas, String.join("\n",
                "Client {", "  org.apache.zookeeper.server.auth.DigestLoginModule required",
                "  username=\"bob\" password=\"bobsecret\";", "};",
                "BadClient {", "  org.apache.zookeeper.server.auth.DigestLoginModule required",
                "  username=\"bob\" password=\"wrong\";", "};", ""));
        System.setProperty("java.security.auth.login.config", jaas.toString());
        String base = "/java-sasl";

        Handle bob = new Handle(connect, 10_000, saslConfig("Client", true));
        check(bob.awaitEvent("SaslAuthenticated None null") != null, "DIGEST-MD5 login as bob succeeds");
        List<String> who = new ArrayList<>();
        for (ClientInfo ci : bob.zk.whoAmI()) {
            who.add(ci.getAuthScheme() + ":" + ci.getUser());
        }
        check(who.contains("sasl:bob"), "whoAmI lists sasl:bob", who.toString());
        bob.zk.create(base, bytes("secret"), acl(new ACL(ZooDefs.Perms.ALL, new Id("sasl", "bob"))), CreateMode.PERSISTENT);
        equal(aclLine(bob.zk.getACL(base, null)), "[31 sasl:bob]", "the node has the sasl:bob ACL");
        equal(new String(bob.zk.getData(base, false, null), StandardCharsets.UTF_8), "secret", "bob reads the node");

        Handle anon = new Handle(connect, 10_000, saslConfig("Client", false));
        check(anon.awaitEvent("SyncConnected None null") != null, "an anonymous client connects");
        equal(code(() -> anon.zk.getData(base, false, null)), "NOAUTH", "an anonymous client may not read it");

        Handle bad = new Handle(connect, 10_000, saslConfig("BadClient", true));
        check(bad.awaitEvent("AuthFailed None null") != null, "a wrong password gets AuthFailed");

        bob.zk.delete(base, -1);
        bad.close();
        anon.close();
        bob.close();
        java.nio.file.Files.deleteIfExists(jaas);
    }

    // kerberos logs in with GSSAPI from the JAAS Client section named on
    // the command line (test/kerberos_test.go: a Krb5LoginModule keytab
    // login as client@EXAMPLE.TEST against zookeeper/localhost; the server
    // drops the realm), so the identity is sasl:client. An anonymous
    // client is refused the node that identity made.
    private void kerberos() throws Exception {
        String base = "/java-kerberos";
        Handle h = new Handle(connect, 10_000, new ZKClientConfig());
        if (!check(h.awaitEvent("SaslAuthenticated None null") != null, "GSSAPI login succeeds", h.seen.toString())) {
            return;
        }
        check(whoAmI(h.zk).contains("sasl:client"), "whoAmI lists sasl:client", whoAmI(h.zk));
        h.zk.create(base, bytes("k"), acl(new ACL(ZooDefs.Perms.ALL, new Id("sasl", "client"))), CreateMode.PERSISTENT);
        equal(new String(h.zk.getData(base, false, null), StandardCharsets.UTF_8), "k", "the client reads its node");
        Handle anon = new Handle(connect, 10_000, plainConfig());
        check(anon.awaitEvent("SyncConnected None null") != null, "an anonymous client connects");
        equal(code(() -> anon.zk.getData(base, false, null)), "NOAUTH", "an anonymous client may not read it");
        anon.close();
        h.zk.delete(base, -1);
        h.close();
    }

    // --- TLS -------------------------------------------------------------

    // tls runs against the runner's secured server (connect is its TLS-only
    // port). alice connects through the Netty socket with her certificate
    // from a JKS keystore and the suite's truststore, sees her x509 identity
    // in whoAmI and works on a node only her certificate may touch; bob
    // (PKCS12 keystore) is refused with NoAuth. A certificate from another
    // CA, an expired certificate and a plaintext client never connect, and
    // alice's session and new TLS clients are served all along.
    private void tls() throws Exception {
        String base = "/java-tls";
        Handle alice = new Handle(connect, 10_000, tlsConfig("alice.jks"));
        if (!check(alice.awaitEvent("SyncConnected None null") != null, "alice connects over TLS")) {
            return;
        }
        equal(whoAmI(alice.zk), "[ip:127.0.0.1, x509:CN=alice,OU=compat,O=zkserverd]", "alice's whoAmI");
        List<ACL> aliceOnly = acl(new ACL(ZooDefs.Perms.ALL, new Id("x509", "CN=alice,OU=compat,O=zkserverd")));
        alice.zk.create(base, bytes("v0"), aliceOnly, CreateMode.PERSISTENT);
        alice.zk.create(base + "/child", bytes("c"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        equal(aclLine(alice.zk.getACL(base, null)), "[31 x509:CN=alice,OU=compat,O=zkserverd]", "the node has alice's x509 ACL");
        equal(alice.zk.setData(base, bytes("v1"), 0).getVersion(), 1, "alice sets the data");
        equal(new String(alice.zk.getData(base, false, null), StandardCharsets.UTF_8), "v1", "alice reads it");
        equal(alice.zk.getChildren(base, false).toString(), "[child]", "alice lists the children");
        alice.zk.delete(base + "/child", -1);
        check(alice.zk.exists(base + "/child", false) == null, "alice deleted the child");

        refused("a certificate from another CA", tlsConfig("mallory.p12"), alice, base);
        refused("an expired certificate", tlsConfig("expired.p12"), alice, base);
        refused("a plaintext client on the TLS port", plainConfig(), alice, base);

        Handle bob = new Handle(connect, 10_000, tlsConfig("bob.p12"));
        if (check(bob.awaitEvent("SyncConnected None null") != null, "bob connects over TLS afterwards")) {
            equal(whoAmI(bob.zk), "[ip:127.0.0.1, x509:CN=bob,OU=compat,O=zkserverd]", "bob's whoAmI");
            equal(code(() -> bob.zk.getData(base, false, null)), "NOAUTH", "bob may not read alice's node");
            equal(code(() -> bob.zk.setData(base, bytes("x"), -1)), "NOAUTH", "bob may not write it");
        }
        bob.close();
        alice.zk.delete(base, -1);
        alice.close();
    }

    // refused checks that a client with cfg gets no session within five
    // seconds while alice's session keeps being served.
    private void refused(String who, ZKClientConfig cfg, Handle alice, String base) throws Exception {
        Handle h = new Handle(connect, 10_000, cfg);
        List<String> events = h.drain(5_000);
        check(!events.contains("SyncConnected None null"), who + " gets no session", events.toString());
        equal(h.zk.getState().toString(), "CONNECTING", who + ": the client is still trying");
        h.close();
        equal(new String(alice.zk.getData(base, false, null), StandardCharsets.UTF_8), "v1", "alice is still served after " + who);
    }

    // tlsConfig is a TLS client configuration with the keystore of the
    // runner's key directory (type from the file name) and its truststore.
    private static ZKClientConfig tlsConfig(String keystore) {
        String dir = System.getenv("ZKCOMPAT_KEYS");
        ZKClientConfig cfg = plainConfig();
        cfg.setProperty(ZKClientConfig.SECURE_CLIENT, "true");
        cfg.setProperty(ZKClientConfig.ZOOKEEPER_CLIENT_CNXN_SOCKET, "org.apache.zookeeper.ClientCnxnSocketNetty");
        cfg.setProperty("zookeeper.ssl.keyStore.location", dir + "/" + keystore);
        cfg.setProperty("zookeeper.ssl.keyStore.password", "changeit");
        cfg.setProperty("zookeeper.ssl.trustStore.location", dir + "/truststore.jks");
        cfg.setProperty("zookeeper.ssl.trustStore.password", "changeit");
        return cfg;
    }

    // plainConfig is a client configuration without TLS or SASL.
    private static ZKClientConfig plainConfig() {
        ZKClientConfig cfg = new ZKClientConfig();
        cfg.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false");
        return cfg;
    }

    // whoAmI lists the connection's identities as scheme:user, sorted.
    private static String whoAmI(ZooKeeper zk) throws Exception {
        List<String> who = new ArrayList<>();
        for (ClientInfo ci : zk.whoAmI()) {
            who.add(ci.getAuthScheme() + ":" + ci.getUser());
        }
        Collections.sort(who);
        return who.toString();
    }

    // saslConfig is a client configuration using the JAAS section (or no SASL).
    private static ZKClientConfig saslConfig(String section, boolean enabled) {
        ZKClientConfig cfg = new ZKClientConfig();
        cfg.setProperty(ZKClientConfig.LOGIN_CONTEXT_NAME_KEY, section);
        cfg.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, Boolean.toString(enabled));
        return cfg;
    }

    // acl builds a mutable list: the client calls contains(null) on it,
    // which List.of rejects.
    private static List<ACL> acl(ACL... entries) {
        return new ArrayList<>(List.of(entries));
    }

    private static String statLine(Stat s) {
        if (s == null) {
            return "null";
        }
        return "czxid=" + s.getCzxid() + " mzxid=" + s.getMzxid() + " pzxid=" + s.getPzxid()
                + " version=" + s.getVersion() + " cversion=" + s.getCversion() + " aversion=" + s.getAversion()
                + " owner=" + s.getEphemeralOwner() + " len=" + s.getDataLength() + " kids=" + s.getNumChildren();
    }

    private static String aclLine(List<ACL> acls) {
        List<String> out = new ArrayList<>();
        for (ACL a : acls) {
            out.add(a.getPerms() + " " + a.getId().getScheme() + ":" + a.getId().getId());
        }
        return out.toString();
    }

    interface Call {
        void run() throws Exception;
    }

    // code runs a call and names the KeeperException code it ended with.
    private static String code(Call c) {
        try {
            c.run();
            return "OK";
        } catch (KeeperException e) {
            return e.code().name();
        } catch (Exception e) {
            return e.getClass().getSimpleName();
        }
    }

    // --- ensemble scenarios ------------------------------------------------
    //
    // The runner starts three members; CONNECT lists them in member order
    // (member N is the N-th address). "@control VERB [N]" lines on stdout ask
    // the runner to act on a member (kill, stop, cont, restart, leader,
    // wait); it answers one line on stdin, "@ok [VALUE]" or "@error ...".

    // Failover takes an election (leader killed) or a quorum loss plus one.
    private static final long FAILOVER_MS = 40_000;
    private static final int ENSEMBLE_SESSION_MS = 20_000;
    private static final Pattern REMOTE = Pattern.compile("remoteserver:\\S*:(\\d+)");

    private final BufferedReader controlReplies =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    // control asks the runner to act on the ensemble and returns the value
    // of its "@ok" answer.
    private String control(String command) throws IOException {
        System.out.println("@control " + command);
        System.out.flush();
        String reply = controlReplies.readLine();
        if (reply == null || !(reply.equals("@ok") || reply.startsWith("@ok "))) {
            throw new IllegalStateException("control " + command + ": " + reply);
        }
        return reply.substring(3).trim();
    }

    private String memberAddress(int member) {
        return connect.split(",")[member - 1];
    }

    private int memberCount() {
        return connect.split(",").length;
    }

    // memberOf returns the member a client is connected to (0 if none), read
    // from the remote address in the client's toString.
    private int memberOf(ZooKeeper zk) {
        Matcher m = REMOTE.matcher(zk.toString());
        if (!m.find()) {
            return 0;
        }
        String[] hosts = connect.split(",");
        for (int i = 0; i < hosts.length; i++) {
            if (hosts[i].endsWith(":" + m.group(1))) {
                return i + 1;
            }
        }
        return 0;
    }

    // onMember opens sessions with every member in the connect string (the
    // client shuffles them) until one lands on member; the others are
    // closed. Null if none did in 40 tries.
    private Handle onMember(int member, boolean canBeReadOnly) throws Exception {
        for (int i = 0; i < 40; i++) {
            Handle h = new Handle(connect, ENSEMBLE_SESSION_MS, canBeReadOnly);
            if (h.awaitEvent("SyncConnected None null") != null && memberOf(h.zk) == member) {
                return h;
            }
            h.close();
        }
        return null;
    }

    private static String fourLetter(String hostPort, String word) {
        String[] hp = hostPort.split(":");
        try (Socket s = new Socket(hp[0], Integer.parseInt(hp[1]))) {
            s.setSoTimeout(5_000);
            s.getOutputStream().write(word.getBytes(StandardCharsets.US_ASCII));
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            return "error: " + e;
        }
    }

    private static void create(ZooKeeper zk, String path, String data, CreateMode mode) throws Exception {
        zk.create(path, data == null ? null : bytes(data), ZooDefs.Ids.OPEN_ACL_UNSAFE, mode);
    }

    // Kill (SIGKILL) the member a client is connected to, once the leader,
    // once a follower: the client reconnects to another member with the
    // same session, its ephemeral survives, its watches fire, it never sees
    // Expired. The killed member, restarted, catches up.
    private void ensembleKill(boolean killLeader) throws Exception {
        String role = killLeader ? "leader" : "follower";
        String base = "/java-ensemble-kill-" + role;
        int leader = Integer.parseInt(control("leader"));
        int target = killLeader ? leader : leader % memberCount() + 1;
        Handle h = onMember(target, false);
        if (!check(h != null, "a client with every member in its connect string is on the " + role)) {
            return;
        }
        long sid = h.zk.getSessionId();
        create(h.zk, base, null, CreateMode.PERSISTENT);
        create(h.zk, base + "/data", "0", CreateMode.PERSISTENT);
        create(h.zk, base + "/eph", null, CreateMode.EPHEMERAL);
        h.zk.getData(base + "/data", true, null);
        h.zk.exists(base + "/later", true);

        control("kill " + target);
        check(h.awaitEvent("Disconnected None null") != null, "client sees Disconnected");
        check(h.awaitEvent("SyncConnected None null", FAILOVER_MS) != null, "client reconnects");
        int now = memberOf(h.zk);
        check(now != 0 && now != target, "to another member");
        equal(h.zk.getSessionId() == sid, true, "same session id after the failover");
        Stat eph = h.zk.exists(base + "/eph", false);
        check(eph != null && eph.getEphemeralOwner() == sid, "the ephemeral survives, owned by the session");

        Handle other = new Handle(connect, ENSEMBLE_SESSION_MS);
        other.zk.setData(base + "/data", bytes("1"), -1);
        create(other.zk, base + "/later", null, CreateMode.PERSISTENT);
        equal(h.awaitEvent("SyncConnected NodeDataChanged " + base + "/data"),
                "SyncConnected NodeDataChanged " + base + "/data", "the data watch set before fires after");
        equal(h.awaitEvent("SyncConnected NodeCreated " + base + "/later"),
                "SyncConnected NodeCreated " + base + "/later", "the exists watch set before fires after");
        check(!h.seen.contains("Expired None null"), "no Expired event", h.seen.toString());

        control("restart " + target);
        Handle back = new Handle(memberAddress(target), ENSEMBLE_SESSION_MS);
        equal(new String(back.zk.getData(base + "/data", false, null), StandardCharsets.UTF_8), "1",
                "the restarted member has caught up");
        check(back.zk.exists(base + "/eph", false) != null, "and has the ephemeral");
        back.close();
        h.close();
        check(waitFor(() -> {
            try {
                return other.zk.exists(base + "/eph", false) == null;
            } catch (Exception e) {
                return false;
            }
        }), "close removes the ephemeral");
        other.close();
    }

    // Read-only mode as ZooKeeper 3.8 has it. The two members a client is
    // not on are stopped (SIGSTOP): the member left disconnects the client
    // and turns read-only (isro). It refuses to resume that read-write
    // session and refuses clients that may not be read-only; a new client
    // that may be gets ConnectedReadOnly on it, reads, and is refused writes
    // with NotReadOnly. Once the two continue, the read-only client is
    // read-write again (SyncConnected) on a new session, since its
    // read-only session was local to that member, and the read-write
    // session resumes.
    private void ensembleReadOnly() throws Exception {
        String base = "/java-ensemble-readonly";
        Handle h = new Handle(connect, ENSEMBLE_SESSION_MS, true);
        if (!check(h.awaitEvent("SyncConnected None null") != null, "a read-only capable client connects read-write")) {
            return;
        }
        create(h.zk, base, "v0", CreateMode.PERSISTENT);
        // With local sessions enabled, an ephemeral makes the session global.
        create(h.zk, base + "/eph", null, CreateMode.EPHEMERAL);
        long sid = h.zk.getSessionId();
        int kept = memberOf(h.zk);
        String keptAddr = memberAddress(kept);
        List<Integer> others = new ArrayList<>();
        for (int m = 1; m <= memberCount(); m++) {
            if (m != kept) {
                others.add(m);
            }
        }
        equal(fourLetter(keptAddr, "isro"), "rw", "isro before");
        for (int m : others) {
            control("stop " + m);
        }
        check(h.awaitEvent("Disconnected None null", FAILOVER_MS) != null, "the member without a quorum disconnects the client");
        if (!check(waitFor(() -> fourLetter(keptAddr, "isro").equals("ro"), FAILOVER_MS), "the member turns read-only (isro = ro)")) {
            for (int m : others) {
                control("cont " + m);
            }
            return;
        }

        Handle ro = new Handle(connect, 6_000, true);
        check(ro.awaitEvent("ConnectedReadOnly None null", FAILOVER_MS) != null, "a new read-only capable client reaches ConnectedReadOnly");
        long roSid = ro.zk.getSessionId();
        equal(memberOf(ro.zk) == kept, true, "on the member that still runs");
        equal(ro.zk.getState(), ZooKeeper.States.CONNECTEDREADONLY, "client state");
        equal(new String(ro.zk.getData(base, false, null), StandardCharsets.UTF_8), "v0", "getData works");
        equal(ro.zk.getChildren(base, false), List.of("eph"), "getChildren works");
        try {
            create(ro.zk, base + "/x", null, CreateMode.PERSISTENT);
            check(false, "create fails with NotReadOnly", "it succeeded");
        } catch (KeeperException e) {
            equal(e.code(), KeeperException.Code.NOTREADONLY, "create fails with");
        }
        try {
            ro.zk.setData(base, bytes("v1"), -1);
            check(false, "setData fails with NotReadOnly", "it succeeded");
        } catch (KeeperException e) {
            equal(e.code(), KeeperException.Code.NOTREADONLY, "setData fails with");
        }
        Handle rw = new Handle(keptAddr, ENSEMBLE_SESSION_MS, false);
        check(rw.awaitEvent("SyncConnected None null", 5_000) == null, "a client that may not be read-only gets no session");
        rw.close();
        check(!h.seen.contains("ConnectedReadOnly None null"), "the read-write session is not resumed read-only", h.seen.toString());

        for (int m : others) {
            control("cont " + m);
        }
        check(ro.awaitEvent("SyncConnected None null", FAILOVER_MS) != null, "the read-only client is read-write again (SyncConnected)");
        equal(ro.zk.getState(), ZooKeeper.States.CONNECTED, "client state");
        check(ro.zk.getSessionId() != roSid, "on a new session");
        create(ro.zk, base + "/after", null, CreateMode.PERSISTENT);
        check(ro.zk.exists(base + "/after", false) != null, "create works");
        check(h.awaitEvent("SyncConnected None null", FAILOVER_MS) != null, "the read-write session reconnects");
        equal(h.zk.getSessionId() == sid, true, "same session");
        Stat eph = ro.zk.exists(base + "/eph", false);
        check(eph != null && eph.getEphemeralOwner() == sid, "its ephemeral survives");
        check(!h.seen.contains("Expired None null"), "no Expired event", h.seen.toString());
        ro.close();
        h.close();
    }

    // Curator recipes on the one member left when the other two are
    // stopped (SIGSTOP): SUSPENDED within a bound; after SIGCONT,
    // RECONNECTED on the same session, never LOST; the mutex is still held
    // and the latch leads again.
    private void ensembleQuorumLoss() throws Exception {
        String base = "/curator-ensemble-quorum-loss";
        CuratorFramework cf = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(ENSEMBLE_SESSION_MS)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .build();
        clients.add(cf);
        List<ConnectionState> states = new CopyOnWriteArrayList<>();
        cf.getConnectionStateListenable().addListener((client, st) -> states.add(st));
        cf.start();
        if (!check(cf.blockUntilConnected((int) WAIT_MS, TimeUnit.MILLISECONDS), "curator connects")) {
            return;
        }
        long sid = cf.getZookeeperClient().getZooKeeper().getSessionId();
        InterProcessMutex mutex = new InterProcessMutex(cf, base + "/mutex");
        check(mutex.acquire(WAIT_MS, TimeUnit.MILLISECONDS), "mutex acquired");
        LeaderLatch latch = new LeaderLatch(cf, base + "/latch");
        latch.start();
        check(latch.await(WAIT_MS, TimeUnit.MILLISECONDS), "latch leads");
        List<String> lockNodes = cf.getChildren().forPath(base + "/mutex");
        equal(lockNodes.size(), 1, "lock nodes");

        int kept = memberOf(cf.getZookeeperClient().getZooKeeper());
        check(kept != 0, "connected to a member");
        List<Integer> others = new ArrayList<>();
        for (int m = 1; m <= memberCount(); m++) {
            if (m != kept) {
                others.add(m);
            }
        }
        for (int m : others) {
            control("stop " + m);
        }
        long stopped = System.nanoTime();
        check(waitFor(() -> states.contains(ConnectionState.SUSPENDED), FAILOVER_MS / 2), "SUSPENDED within 20 s");
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopped);
        check(waitFor(() -> !latch.hasLeadership(), WAIT_MS), "the latch gives up leadership while suspended");
        for (int m : others) {
            control("cont " + m);
        }
        check(waitFor(() -> states.contains(ConnectionState.RECONNECTED), FAILOVER_MS), "RECONNECTED after SIGCONT");
        equal(states.contains(ConnectionState.LOST), false, "LOST seen");
        equal(cf.getZookeeperClient().getZooKeeper().getSessionId() == sid, true, "same session");
        check(mutex.isAcquiredInThisProcess(), "the mutex is still held");
        check(cf.getChildren().forPath(base + "/mutex").equals(lockNodes), "the lock node is still there");
        Stat owner = cf.checkExists().forPath(base + "/mutex/" + lockNodes.get(0));
        check(owner != null && owner.getEphemeralOwner() == sid, "owned by the session");
        check(latch.await(WAIT_MS, TimeUnit.MILLISECONDS), "the latch leads again");
        mutex.release();
        latch.close();
        System.err.println("suspended after " + ms + " ms");
    }

    // Proxy is a loopback TCP proxy that can cut its connections and refuse
    // new ones, to make a client lose and regain its connection.
    private static final class Proxy implements AutoCloseable {
        private final ServerSocket listener;
        private final String target;
        private final List<Socket> open = new CopyOnWriteArrayList<>();
        private volatile boolean refusing;

        Proxy(String target) throws IOException {
            this.target = target;
            listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread t = new Thread(this::accept, "proxy-accept");
            t.setDaemon(true);
            t.start();
        }

        String address() {
            return "127.0.0.1:" + listener.getLocalPort();
        }

        void refuse(boolean on) {
            refusing = on;
        }

        void cut() {
            for (Socket s : open) {
                closeQuietly(s);
            }
            open.clear();
        }

        private void accept() {
            while (!listener.isClosed()) {
                Socket in;
                try {
                    in = listener.accept();
                } catch (IOException e) {
                    return;
                }
                if (refusing) {
                    closeQuietly(in);
                    continue;
                }
                try {
                    String[] hp = target.split(":");
                    Socket out = new Socket(hp[0], Integer.parseInt(hp[1]));
                    open.add(in);
                    open.add(out);
                    pump(in, out);
                    pump(out, in);
                } catch (IOException e) {
                    closeQuietly(in);
                }
            }
        }

        private void pump(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[65536];
                try (InputStream is = from.getInputStream(); OutputStream os = to.getOutputStream()) {
                    int n;
                    while ((n = is.read(buf)) > 0) {
                        os.write(buf, 0, n);
                        os.flush();
                    }
                } catch (IOException e) {
                    // cut or closed
                } finally {
                    closeQuietly(from);
                    closeQuietly(to);
                }
            }, "proxy-pump");
            t.setDaemon(true);
            t.start();
        }

        private static void closeQuietly(Socket s) {
            try {
                s.close();
            } catch (IOException e) {
                // already closed
            }
        }

        @Override
        public void close() throws IOException {
            listener.close();
            cut();
        }
    }
}
