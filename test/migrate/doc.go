// Package migrate is the proof that a running Apache ZooKeeper ensemble
// moves to zkserverd without downtime (issue 37): `zkserverd mirror`
// follows it, serves its clients, and `zkserverd takeover` turns the
// mirrors into a zkserverd ensemble, while Curator and kazoo clients
// (java/, kazoo/) hold an ephemeral node, a lock, a leadership and a
// watch, write at a steady rate, and check that they read their own
// writes.
//
// The clients print one JSON line per event (events.go); Check (check.go)
// reads those logs and the final tree and lists every broken promise: an
// acknowledged write missing or applied twice, a session that ended, a
// recipe that let go, a watch that stopped firing, a zxid that went
// backwards. It also measures the clients' write pause at the switch.
//
// The scenarios (migrate_test.go) launch Debian's ZooKeeper 3.8, the
// mirrors and the clients; they run only with ZKSERVERD_MIGRATE=1
// (`make migrate`). The normal suite runs the checker's own tests and a
// quick form of the takeover (TestQuickMigration), which skips where
// ZooKeeper or the clients are missing, unless ZKSERVERD_REQUIRE_ZOOKEEPER
// is 1 (CI installs them first: make migrate-deps).
package migrate
