// Package zkimport migrates an Apache ZooKeeper (3.5 to 3.9) data directory
// into a zkserverd data directory.
//
// It reads ZooKeeper's on-disk formats itself: the newest valid
// snapshot.<zxid> file (FileSnap: a header, the session map, the ACL cache,
// the node list and an Adler-32 seal) and the log.<zxid> files after it
// (FileTxnLog: checksummed entries of a TxnHeader and a txn record), and
// replays the logged transactions as ZooKeeper's DataTree does, fuzzy-snapshot
// corrections included. The result keeps every znode with its data, ACL and
// exact stat (czxid, mzxid, pzxid, ctime, mtime, version, cversion,
// aversion); sessions do not survive a migration, so their ephemeral nodes
// are dropped.
//
// The output is a fresh zkserverd data directory: a raft file snapshot
// holding the FSM state (the tree in datatree's snapshot format, an empty
// session table and the imported last zxid) plus a raft-boltdb store with the
// current term, so that a standalone zkserverd (raft ID "1") restores it on
// start as its only voter.
package zkimport
