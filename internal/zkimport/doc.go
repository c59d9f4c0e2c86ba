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
// The output is a fresh zkserverd data directory written by the server's
// own code: the nodes are loaded into a datatree.Tree (datatree.Loader) and
// replication.Seed makes it the state of a new standalone server, so the
// FSM snapshot envelope (txnlog), the tree stream (datatree), the snapshot
// store and the raft-boltdb log store are written exactly as a running
// server writes them. An empty session table and the imported last zxid go
// with the tree.
//
// The readers are exported for package mirror, which follows a live
// ZooKeeper ensemble: DecodeTxn decodes one log entry (header, record,
// multi elements, digest), ReadSnapshotBody reads the body of a snapshot
// as a Zab SNAP sends it, ReadLogEntries iterates over a log file,
// ReadDataDir restores a whole data directory as ZooKeeper does, and
// Replay applies entries with ZooKeeper's tolerance of fuzzy snapshots.
package zkimport
