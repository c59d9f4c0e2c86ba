// Package acl decides who may do what to a znode, and who a connection is.
//
// It has three parts:
//
//   - Providers turn an auth packet (opcode 100) into identities, and say
//     whether an identity satisfies an ACL entry of their scheme. The built-in
//     providers are world, ip, digest, x509 and usersfile; anyone can write
//     more by implementing Provider.
//   - A Registry maps schemes to providers. It is built once per server
//     (there is no package-level state), handles the super digest, and
//     implements the ACL algorithms of ZooKeeper's server: the permission
//     check (Allowed), the validation and "auth" expansion of an ACL being set
//     (FixupACL), and the masking of digest ids for readers without ADMIN
//     (MaskForReader).
//   - Helpers: ConnIDs (the identities a connection starts with), Digest (the
//     digest scheme's id for "user:password"), ParsePerms/FormatPerms (the
//     "cdrwa" letters of zkCli) and HashPassword (lines for a users file).
//
// A server uses it like this:
//
//	reg := acl.NewRegistry(acl.Options{SuperDigest: cfg.SuperDigest})
//	ids := acl.ConnIDs(conn.RemoteAddr())               // on accept
//	more, err := reg.Authenticate(scheme, info, data)   // on each auth packet;
//	                                                    // err: reply AuthFailed, close
//	ok := reg.Allowed(node.ACL, ids, jute.PermRead)     // on each request
//	acls, code := reg.FixupACL(req.ACL, ids)            // on create and setACL
//
// The behaviour follows Apache ZooKeeper 3.9 (PrepRequestProcessor.fixupACL,
// ZooKeeperServer.checkACL and the providers in org.apache.zookeeper.server.auth),
// including its string-parsing quirks where they decide whether an ACL is
// valid. docs/acl.md describes the schemes for operators.
package acl
