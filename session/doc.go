// Package session holds ZooKeeper's session semantics: timeout negotiation,
// session ids and passwords, the replicated session table, and the expiry
// tracker.
//
// The pieces and who uses them:
//
//   - Negotiate clamps a client's requested timeout into the configured
//     [min, max] window, as ZooKeeper does.
//   - IDGenerator hands out session ids in ZooKeeper's layout: the server
//     id in the top byte, a millisecond timestamp below it, then +1 per
//     session. Password derives the 16-byte session password from an id
//     exactly as ZooKeeper does, so every member computes the same bytes
//     and nothing secret needs to be replicated.
//   - Table is the replicated map of live sessions (id → negotiated
//     timeout and owner, the member whose connection the session last
//     used). It changes only when session transactions are applied, by one
//     goroutine, and is read by many. WriteTo/ReadTable give the snapshot
//     encoding.
//   - Tracker is an expiry clock (ZooKeeper's ExpiryQueue). Deadlines are
//     rounded up to the next tick boundary, so a session expires between
//     timeout and timeout+tick after its last touch. Expired ids are handed
//     to a callback: the server's proposes closeSession while its member
//     leads (only the leader expires sessions), and the id is removed from
//     the Tracker when that transaction applies; the read-only server runs
//     one for its local sessions.
//
// The server's use, in outline:
//
//	tr := session.NewTracker(session.RealClock{}, tick, proposeClose)
//	for _, s := range table.All() {
//		tr.Add(s.ID, time.Duration(s.Timeout)*time.Millisecond) // fresh timeout for everyone
//	}
//	go tr.Run(ctx) // until leadership is lost
//	// on every packet from a session (local or forwarded): tr.Touch(id)
//	// on applying createSession: table.Add + tr.Add
//	// on applying closeSession:  table.Remove + tr.Remove
package session
