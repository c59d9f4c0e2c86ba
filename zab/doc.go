// Package zab joins a running Apache ZooKeeper ensemble (3.5 to 3.9) as
// an observer, speaking ZooKeeper's own quorum protocol, so that
// zkserverd can mirror an ensemble's state before it takes over. It does
// the wire and the protocol; what the transactions and snapshots mean is
// the Handler's business (the mirror package implements it).
//
// The observer needs a server.K=host:quorumPort:electionPort:observer
// line in the ensemble's configuration (Config.MyID is K, Config.Servers
// its server.N lines). It goes through these phases, as ZooKeeper's
// Observer and Learner classes do, and back to the first whenever the
// leader connection ends (with a backoff of 100 ms doubling to
// Config.MaxBackoff), until Close:
//
//  1. Finding the leader (election port). The observer opens a
//     connection to each voter's election address (QuorumCnxManager: a
//     long protocol version -65536, its sid, its election address) and
//     sends a LOOKING notification that proposes nobody. A voter does not
//     count an observer's vote; it answers at once with its own
//     (FOLLOWING or LEADING, leader, peer epoch, its configuration). The
//     larger sid of a pair keeps the connection it opened: a voter with a
//     larger sid than the observer's closes the observer's connection and
//     dials the observer's election address, where the observer listens.
//     The leader is decided as FastLeaderElection decides it for an
//     observer: a quorum of the voters names the same leader and peer
//     epoch, and the leader's own answer says LEADING in that epoch. The
//     notifications are repeated with a doubling interval until then.
//  2. Registration (the leader's quorum port). OBSERVERINFO carries a
//     LearnerInfo (sid, protocol 0x10000, config version); the leader
//     answers LEADERINFO with the new epoch, and the observer's ACKEPOCH
//     presents Handler.LastZxid (0 after a refused truncation), from
//     which the leader chooses the sync.
//  3. Sync. DIFF is followed by PROPOSAL/COMMIT pairs (and INFORMs of
//     commits that happen meanwhile), TRUNC asks the Handler to drop what
//     follows a zxid, and SNAP is followed on the stream by the snapshot
//     (SerializeUtils.serializeSnapshot, which Handler.Snapshot reads) and
//     the string "BenWasHere". NEWLEADER (with the leader's configuration)
//     is acknowledged with ACK of the new epoch's zxid, and UPTODATE with
//     another; then Handler.UpToDate is called.
//  4. Observing. INFORM carries each committed transaction and
//     INFORMANDACTIVATE a committed reconfig (preceded by the suggested
//     leader's sid; if it is another leader, the observer starts over).
//     PING is answered with the touch table (Touch), REVALIDATE and SYNC
//     answer Revalidate and Sync.
//
// Transactions reach Handler.Txn once each, in zxid order, on the run
// goroutine; Handler.UpToDate follows every sync, the re-syncs after a
// leader change included. A snapshot is fuzzy: the leader serializes its tree while it
// keeps applying, so the snapshot may already hold some effects of
// transactions after its zxid, which follow as transactions; the observer
// skips only those at or below the snapshot's zxid. A Txn or Snapshot
// error stops the observer (Err, Done); it does not retry the same data.
//
// Client work goes to the leader through Request (a REQUEST packet laid
// out as Learner.request writes it), Revalidate and Sync. The result of a
// request comes back as a transaction whose header (ParseTxnHeader)
// carries the request's session and cxid; that is how a caller learns
// that its write was committed.
//
// An ensemble with quorum TLS or quorum SASL needs Config.Network (TLS on
// both ports, run by the caller's implementation) and Config.Auth
// (ZooKeeper's QuorumAuthPacket login, secure.go, with the caller's SASL
// mechanisms): the observer logs in at the start of its leader connection
// and after the opening of each election connection it opens, and checks
// the login of a voter that opens one to it.
package zab
