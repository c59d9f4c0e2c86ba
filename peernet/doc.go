// Package peernet secures the connections between ensemble members, on
// both of a member's ports (raft on the quorum port, write forwarding on
// the election port): TLS with ZooKeeper's sslQuorum and ssl.quorum.*
// keys (mutual authentication, host name verification, port unification
// for rolling upgrades) and a DIGEST-MD5 login with the quorum.auth.* keys
// and the QuorumServer/QuorumLearner JAAS sections.
//
// A Network listens and dials; replication builds raft's stream layer and
// its forwarding links on it. A connection is handed over only after its
// TLS handshake and login succeeded; a refused one is closed and logged on
// both sides with the peer's address and the reason.
//
// The handshake after TLS is zkserverd's own (see hello.go): Apache
// ZooKeeper members and zkserverd members never share an ensemble, so it
// need not be ZooKeeper's QuorumAuthPacket. A member configured with none
// of these keys uses plain TCP and sends exactly what it sent before.
//
// zkserverd mirror, which joins an Apache ZooKeeper ensemble as an
// observer, uses the same TLS through NewForZooKeeper (nothing after the
// TLS handshake, as ZooKeeper members connect) and the same credentials
// through LoadQuorumLogin, for ZooKeeper's own login exchange, which
// package zab runs (zookeeper.go).
package peernet
