package conf

import (
	"strings"
	"unicode/utf8"
)

// Suggestions for mistyped keys. ZooKeeper silently turns a key it does
// not know into a system property nobody reads, so `dataDIr=/var/lib/zk`
// or `tickTme=2000` is lost without a word; zkserverd warns about unknown
// keys and names the known key closest to each one.

// knownKeys are the keys of zoo.cfg and of ZooKeeper's server system
// properties (without the "zookeeper." prefix) that zkserverd knows by
// name, interpreted or not: the candidates for a suggestion. Keys of the
// form <family>.<number> are in numberedKeys. TestKnownKeysComplete checks
// that every key the parser switches on is listed, and that every listed
// key parses without an "unknown key" warning.
var knownKeys = []string{
	// Read by QuorumPeerConfig itself (setQuorumKey).
	"dataDir", "dataLogDir", "clientPort", "clientPortAddress", "secureClientPort",
	"secureClientPortAddress", "observerMasterPort", "clientPortListenBacklog", "tickTime",
	"maxClientCnxns", "minSessionTimeout", "maxSessionTimeout", "initLimit", "syncLimit",
	"connectToLearnerMasterLimit", "electionAlg", "quorumListenOnAllIPs", "peerType",
	"syncEnabled", "dynamicConfigFile", "autopurge.snapRetainCount", "autopurge.purgeInterval",
	"standaloneEnabled", "reconfigEnabled", "join", "forceNewEnsemble", "digest.intervalMs",
	"logStore", "wal.segmentSizeBytes", "memory.limitBytes", "localSessionsEnabled", "localSessionsUpgradingEnabled",
	"metricsProvider.className", "metricsProvider.httpPort", "version",
	// System properties (setPropertyKey).
	"4lw.commands.whitelist", "admin.enableServer", "admin.serverAddress", "admin.serverPort",
	"admin.commandURL", "admin.idleTimeout", "snapCount", "fsync.warningthresholdms",
	"preAllocSize", "globalOutstandingLimit", "extendedTypesEnabled", "clientTcpKeepAlive",
	"forceSync", "skipACL", "jute.maxbuffer", "largeRequestMaxBytes", "largeRequestThreshold",
	"nio.sessionlessCnxnTimeout", "readonlymode.enabled", "znode.container.checkIntervalMs",
	"znode.container.maxPerMinute", "znode.container.maxNeverUsedIntervalMs", "audit.enable",
	"DigestAuthenticationProvider.superDigest",
	// Client TLS (setSSLKey, setTLSKey with "ssl.").
	"ssl.keyStore.location", "ssl.keyStore.password", "ssl.keyStore.passwordPath",
	"ssl.keyStore.type", "ssl.trustStore.location", "ssl.trustStore.password",
	"ssl.trustStore.passwordPath", "ssl.trustStore.type", "ssl.clientAuth", "ssl.protocol",
	"ssl.enabledProtocols", "ssl.ciphersuites", "ssl.hostnameVerification",
	"ssl.authProvider", "client.portUnification", "client.certReload",
	// Between members (setQuorumSecurityKey, setTLSKey with "ssl.quorum.").
	"sslQuorum", "portUnification", "sslQuorumReloadCertFiles", "quorum.auth.enableSasl",
	"quorum.auth.learnerRequireSasl", "quorum.auth.serverRequireSasl",
	"quorum.auth.learner.saslLoginContext", "quorum.auth.server.saslLoginContext",
	"quorum.auth.kerberos.servicePrincipal",
	"ssl.quorum.keyStore.location", "ssl.quorum.keyStore.password",
	"ssl.quorum.keyStore.passwordPath", "ssl.quorum.keyStore.type",
	"ssl.quorum.trustStore.location", "ssl.quorum.trustStore.password",
	"ssl.quorum.trustStore.passwordPath", "ssl.quorum.trustStore.type",
	"ssl.quorum.clientAuth", "ssl.quorum.protocol", "ssl.quorum.enabledProtocols",
	"ssl.quorum.ciphersuites", "ssl.quorum.hostnameVerification",
	// SASL and enforced authentication (setSASLKey).
	"java.security.auth.login.config", "java.security.krb5.conf", "java.security.krb5.realm",
	"java.security.krb5.kdc", "sasl.serverconfig", "SASLAuthenticationProvider.superPassword",
	"allowSaslFailedClients", "kerberos.removeHostFromPrincipal",
	"kerberos.removeRealmFromPrincipal", "security.auth_to_local", "requireKerberosConfig",
	"enforce.auth.enabled", "enforce.auth.schemes", "sessionRequireClientSASLAuth", "superUser",
	// Accepted, not acted on (ignoredSecurityKey, checkRefusedSecurityKey).
	"ssl.allowReverseDnsLookup", "ssl.handshakeDetectionTimeoutMillis", "fips-mode",
	"netty.server.outstandingHandshake.limit", "netty.server.earlyDropSecureConnectionHandshakes",
	"netty.advancedFlowControl.enabled", "kinit", "ensembleAuthName", "ssl.crl", "ssl.ocsp",
	"ssl.quorum.crl", "ssl.quorum.ocsp", "ssl.context.supplier.class",
	"ssl.quorum.context.supplier.class", "DigestAuthenticationProvider.digestAlg",
	"DigestAuthenticationProvider.enabled",
	// Accepted, not acted on (knownUninterpreted).
	"oraclePath", "quorum.cnxn.threads.size", "enforceQuota", "digest.enabled",
	"snapSizeLimitInKb", "txnLogSizeLimitInKb", "commitLogCount", "serverCnxnFactory",
	"maxCnxns", "snapshot.trust.empty", "watchManagerName",
	"X509AuthenticationProvider.superUser", "closeSessionTxn.enabled", "leaderServes",
	"maxBatchSize", "flushDelay", "maxWriteQueuePollTime", "cnxTimeout",
	"electionPortBindRetry", "tcpKeepAlive", "jute.maxbuffer.extrasize", "emulate353TTLNodes",
	"requireClientAuthScheme", "intBufferStartingSizeBytes", "outstandingHandshake.limit",
	"learner.asyncSending", "learner.closeSocketAsync", "leader.closeSocketAsync",
	"snapshot.compression.method", "secureClientPortListenBacklog",
	"metricsProvider.httpHost", "metricsProvider.exportJvmInfo",
}

// numberedKeys are the key families followed by a number, written with
// "N" for the number.
var numberedKeys = []string{"server.N", "authProvider.N", "group.N", "weight.N"}

// suggestKey returns the known key closest to key, "" when none is close:
// the same key in another case, or within a small edit distance (one edit
// for keys of up to five characters, two for longer ones; a swap of two
// neighbouring characters is one edit). A "zookeeper." prefix is kept, and
// the number of a numbered key (server.3) is carried over. A key that is
// itself known has no suggestion.
func suggestKey(key string) string {
	prefix, name := "", key
	if rest, ok := strings.CutPrefix(key, sysPropPrefix); ok {
		prefix, name = sysPropPrefix, rest
	}
	candidates, number := knownKeys, ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 && isDigits(name[i+1:]) {
		candidates, number, name = numberedKeys, name[i+1:], name[:i]+".N"
	}
	limit := 2
	if utf8.RuneCountInString(name) <= 5 {
		limit = 1
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if c == name {
			return ""
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	if number != "" {
		best = strings.TrimSuffix(best, "N") + number
	}
	return prefix + best
}

// caseSuggestion returns the known key that equals key but for case (with
// any "zookeeper." prefix kept), or "". It is the only suggestion made for
// keys accepted silently because of their prefix (ssl.*, admin.*, ...):
// ssl.keystore.location is a mistake for ssl.keyStore.location, while
// another key close to a known one may be a real ZooKeeper key.
func caseSuggestion(key string) string {
	s := suggestKey(key)
	if s != "" && strings.EqualFold(s, key) {
		return s
	}
	return ""
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// editDistance is the optimal string alignment distance between a and b,
// over runes: insertions, deletions, substitutions and swaps of two
// neighbouring runes each cost one.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// rows[i%3] holds row i of the table: the distances from x[:i].
	var rows [3][]int
	for i := range rows {
		rows[i] = make([]int, len(y)+1)
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur, prev, prev2 := rows[i%3], rows[(i-1)%3], rows[(i+1)%3]
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
	}
	return rows[len(x)%3][len(y)]
}
