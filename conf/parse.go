package conf

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// maxConfigSize bounds how much of a configuration file is read.
const maxConfigSize = 4 << 20

// sysPropPrefix is the prefix ZooKeeper gives zoo.cfg keys it turns into
// JVM system properties; such keys are accepted with or without it.
const sysPropPrefix = "zookeeper."

// Parse reads a zoo.cfg from r, starting from Default(). It returns the
// configuration, warnings (one per unknown key, naming it and the known key
// it may be a mistake for, plus values it adjusted), and an error naming the
// key and value of the first value that does not parse. Parse does not call
// Validate, and does not require dataDir (Load does). System properties
// (see SystemProperties) are applied before the file's lines, so the file
// wins where both set a value.
func Parse(r io.Reader, sys ...Property) (Config, []string, error) {
	c, p, err := parse(r, sys)
	if err != nil {
		return Config{}, nil, err
	}
	return c, p.warnings, nil
}

// parse is Parse, returning the parser for what it saw.
func parse(r io.Reader, sys []Property) (Config, *parser, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxConfigSize+1))
	if err != nil {
		return Config{}, nil, fmt.Errorf("conf: read: %w", err)
	}
	if len(data) > maxConfigSize {
		return Config{}, nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, maxConfigSize)
	}
	props, err := readProperties(string(data))
	if err != nil {
		return Config{}, nil, err
	}
	c := Default()
	p := &parser{c: &c, suggested: map[string]string{}}
	for _, kv := range toProperties(sys) {
		if err := p.set(kv.key, kv.value); err != nil {
			return Config{}, nil, err
		}
	}
	for _, kv := range props {
		p.fileKeys = append(p.fileKeys, kv.key)
		if err := p.set(kv.key, kv.value); err != nil {
			return Config{}, nil, err
		}
	}
	p.finish()
	c.SASL.JVMProperties = propertyMap(sys)
	return c, p, nil
}

// parseFile parses a configuration file read from r, as Parse does, and
// requires what ZooKeeper requires of a file: a dataDir line
// (QuorumPeerConfig refuses to start without one), unless dataDir, given
// outside the file, replaces it ("" for none). Every error names path.
func parseFile(r io.Reader, path string, sys []Property, dataDir string) (Config, []string, error) {
	c, p, err := parse(r, sys)
	if err != nil {
		return Config{}, nil, WithSource(err, path)
	}
	if dataDir != "" {
		c.DataDir = dataDir
		if !p.dataLogDirSet {
			c.DataLogDir = dataDir
		}
	} else if !slices.Contains(p.fileKeys, "dataDir") {
		reason := "is not set: ZooKeeper refuses to start without it; add dataDir=<directory>"
		for _, key := range p.fileKeys {
			if p.suggested[key] == "dataDir" {
				reason = fmt.Sprintf("is not set (the file sets %q: did you mean dataDir?)", key)
				break
			}
		}
		return Config{}, nil, &KeyError{Source: path, Key: "dataDir", Reason: reason, Missing: true}
	}
	return c, p.warnings, nil
}

// Load parses the file at path (see Parse); the file must set dataDir, as
// ZooKeeper requires. When the file lists servers, it also reads MyID from
// dataDir/myid; a missing myid file is an error only for an ensemble (see
// Distributed), as in ZooKeeper. DataDir is kept as written, relative or
// not. sys are applied as Parse applies them. Every error names the file
// (KeyError.Source) or the myid file.
func Load(path string, sys ...Property) (Config, []string, error) {
	return LoadWithDataDir(path, "", sys...)
}

// LoadWithDataDir is Load with the data directory given outside the file
// (a command-line flag), unless it is "": it replaces the file's dataDir,
// and the file's dataLogDir too when the file sets none, so the file need
// not set dataDir, and myid is read from it.
func LoadWithDataDir(path, dataDir string, sys ...Property) (Config, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, nil, fmt.Errorf("conf: load: %w", err)
	}
	defer f.Close()
	c, warnings, err := parseFile(f, path, sys, dataDir)
	if err != nil {
		return Config{}, nil, err
	}
	if len(c.Servers) > 0 {
		id, err := LoadMyID(c.DataDir)
		switch {
		case err == nil:
			c.MyID = id
		case errors.Is(err, fs.ErrNotExist) && !c.Distributed():
		default:
			return Config{}, nil, WithSource(err, path)
		}
	}
	return c, warnings, nil
}

// LoadMyID reads this member's server id from dataDir/myid: a decimal
// integer on the first line, surrounding whitespace ignored. A missing file
// gives an error wrapping fs.ErrNotExist.
func LoadMyID(dataDir string) (int64, error) {
	path := filepath.Join(dataDir, "myid")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("conf: myid: %w", err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	first = strings.TrimSpace(first)
	id, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: server id %q is not a number", ErrInvalid, path, first)
	}
	return id, nil
}

// parser applies properties to a Config.
type parser struct {
	c             *Config
	warnings      []string
	dataLogDirSet bool
	clientPortSet bool
	// fileKeys are the keys of the file's lines (not system properties),
	// in order; suggested maps each unknown key to its suggestion.
	fileKeys  []string
	suggested map[string]string
}

// set applies one key: first-class zoo.cfg keys, then system-property
// keys (bare or with the "zookeeper." prefix), then known keys kept
// uninterpreted; anything else is kept too, with a warning.
func (p *parser) set(key, value string) error {
	if ok, err := p.setQuorumKey(key, value); ok {
		return err
	}
	name := strings.TrimPrefix(key, sysPropPrefix)
	if ok, err := p.setQuorumSecurityKey(key, name, value); ok {
		return err
	}
	if ok, err := p.setSSLKey(key, name, value); ok || err != nil {
		return err
	}
	if ok, err := p.setSASLKey(key, name, value); ok {
		return err
	}
	if ok, err := p.setPropertyKey(key, name, value); ok {
		return err
	}
	p.c.Extra[key] = value
	suggestion := ""
	if !knownUninterpreted(key) && !knownUninterpreted(name) {
		suggestion = suggestKey(key)
	} else if suggestion = caseSuggestion(key); suggestion == "" {
		return nil
	}
	if suggestion == "" {
		p.warnf("conf: unknown key %q (kept, not interpreted)", key)
		return nil
	}
	p.suggested[key] = suggestion
	p.warnf("conf: unknown key %q (kept, not interpreted): did you mean %s?", key, suggestion)
	return nil
}

// warnf records a warning.
func (p *parser) warnf(format string, args ...any) {
	p.warnings = append(p.warnings, fmt.Sprintf(format, args...))
}

// setQuorumKey handles the keys QuorumPeerConfig reads itself.
func (p *parser) setQuorumKey(key, v string) (bool, error) {
	c := p.c
	var err error
	switch key {
	case "dataDir":
		c.DataDir = v
	case "dataLogDir":
		c.DataLogDir, p.dataLogDirSet = v, true
	case "clientPort":
		c.ClientPort, err = parseInt(key, v)
		p.clientPortSet = true
	case "clientPortAddress":
		c.ClientPortAddress = v
	case "secureClientPort":
		c.SecureClientPort, err = parseInt(key, v)
	case "secureClientPortAddress":
		c.SecureClientPortAddress = v
	case "observerMasterPort":
		c.ObserverMasterPort, err = parseInt(key, v)
	case "clientPortListenBacklog":
		c.ClientPortListenBacklog, err = parseInt(key, v)
	case "tickTime":
		c.TickTime, err = parseInt(key, v)
	case "maxClientCnxns":
		c.MaxClientCnxns, err = parseInt(key, v)
	case "minSessionTimeout":
		c.MinSessionTimeout, err = parseInt(key, v)
	case "maxSessionTimeout":
		c.MaxSessionTimeout, err = parseInt(key, v)
	case "initLimit":
		c.InitLimit, err = parseInt(key, v)
	case "syncLimit":
		c.SyncLimit, err = parseInt(key, v)
	case "connectToLearnerMasterLimit":
		c.ConnectToLearnerMasterLimit, err = parseInt(key, v)
	case "electionAlg":
		c.ElectionAlg, err = parseInt(key, v)
	case "quorumListenOnAllIPs":
		c.QuorumListenOnAllIPs, err = parseBool(key, v)
	case "peerType":
		c.PeerType, err = parsePeerType(key, v)
	case "syncEnabled":
		c.SyncEnabled, err = parseBool(key, v)
	case "dynamicConfigFile":
		c.DynamicConfigFile = v
	case "autopurge.snapRetainCount":
		c.AutopurgeSnapRetainCount, err = parseInt(key, v)
	case "autopurge.purgeInterval":
		c.AutopurgePurgeInterval, err = parseInt(key, v)
	case "standaloneEnabled":
		c.StandaloneEnabled, err = parseBool(key, v)
	case "reconfigEnabled":
		c.ReconfigEnabled, err = parseBool(key, v)
	case "join":
		c.Join, err = parseBool(key, v)
	case "forceNewEnsemble":
		c.ForceNewEnsemble, err = parseBool(key, v)
	case "digest.intervalMs":
		c.DigestIntervalMs, err = parseInt(key, v)
	case "logStore":
		if v != "boltdb" && v != "wal" {
			err = keyErr(key, v, "is neither boltdb nor wal")
		}
		c.LogStore = v
	case "wal.segmentSizeBytes":
		c.WALSegmentSizeBytes, err = parseInt(key, v)
	case "memory.limitBytes":
		c.MemoryLimitBytes, err = parseLong(key, v)
	case "localSessionsEnabled":
		c.LocalSessionsEnabled, err = parseBool(key, v)
	case "localSessionsUpgradingEnabled":
		c.LocalSessionsUpgradingEnabled, err = parseBool(key, v)
	case "metricsProvider.className":
		c.MetricsProviderClassName = v
	case "metricsProvider.httpPort":
		c.MetricsHTTPPort, err = parseInt(key, v)
	case "version":
		c.ConfigVersion, err = parseHexLong(key, v)
	default:
		if !strings.HasPrefix(key, "server.") {
			return false, nil
		}
		err = p.addServer(key, v)
	}
	return true, err
}

// setPropertyKey handles keys ZooKeeper reads as JVM system properties.
// key is as written, name without any "zookeeper." prefix.
func (p *parser) setPropertyKey(key, name, v string) (bool, error) {
	c := p.c
	var err error
	switch name {
	case "4lw.commands.whitelist":
		c.FourLetterWordWhitelist = splitList(v)
	case "admin.enableServer":
		c.AdminEnableServer, err = parseBool(key, v)
	case "admin.serverAddress":
		c.AdminServerAddress = v
	case "admin.serverPort":
		c.AdminServerPort, err = decodeInt(key, v)
	case "admin.commandURL":
		c.AdminCommandURL = v
	case "admin.idleTimeout":
		c.AdminIdleTimeout, err = decodeInt(key, v)
	case "snapCount":
		c.SnapCount, err = decodeInt(key, v)
	case "fsync.warningthresholdms":
		c.FsyncWarningThresholdMs, err = decodeLong(key, v)
	case "preAllocSize":
		c.PreAllocSize, err = decodeLong(key, v)
	case "globalOutstandingLimit":
		c.GlobalOutstandingLimit, err = decodeInt(key, v)
	case "extendedTypesEnabled":
		c.ExtendedTypesEnabled, err = parseBool(key, v)
	case "clientTcpKeepAlive":
		c.ClientTCPKeepAlive, err = parseBool(key, v)
	case "forceSync":
		c.ForceSync, err = parseYesNo(key, v)
	case "skipACL":
		c.SkipACL, err = parseYesNo(key, v)
	case "jute.maxbuffer":
		c.JuteMaxBuffer, err = decodeInt(key, v)
	case "largeRequestMaxBytes":
		c.LargeRequestMaxBytes, err = decodeInt(key, v)
	case "largeRequestThreshold":
		c.LargeRequestThreshold, err = decodeInt(key, v)
	case "nio.sessionlessCnxnTimeout":
		c.SessionlessCnxnTimeout, err = decodeInt(key, v)
	case "readonlymode.enabled":
		c.ReadOnlyModeEnabled, err = parseBool(key, v)
	case "znode.container.checkIntervalMs":
		c.ContainerCheckIntervalMs, err = decodeInt(key, v)
	case "znode.container.maxPerMinute":
		c.ContainerMaxPerMinute, err = decodeInt(key, v)
	case "znode.container.maxNeverUsedIntervalMs":
		var ms int64
		ms, err = decodeLong(key, v)
		c.ContainerMaxNeverUsedIntervalMs = ms
	case "audit.enable":
		c.AuditEnable, err = parseBool(key, v)
	case "DigestAuthenticationProvider.superDigest":
		c.SuperDigest = v
	default:
		n, ok := strings.CutPrefix(name, "authProvider.")
		if !ok {
			return false, nil
		}
		id, convErr := strconv.Atoi(n)
		if convErr != nil {
			c.Extra[key] = v
			p.warnf("conf: %s: provider name %q is not a number (kept, not interpreted)", key, n)
			return true, nil
		}
		c.AuthProviders[id] = v
	}
	return true, err
}

// finish applies the defaults and adjustments ZooKeeper makes after
// reading every key.
func (p *parser) finish() {
	c := p.c
	if !p.dataLogDirSet {
		c.DataLogDir = c.DataDir
	}
	// ZooKeeper opens no plaintext port when only secureClientPort is set.
	c.NoClientPort = c.SecureClientPort != 0 && !p.clientPortSet
	if c.AutopurgeSnapRetainCount < 3 {
		p.warnf("conf: autopurge.snapRetainCount: %d is below the minimum; using 3", c.AutopurgeSnapRetainCount)
		c.AutopurgeSnapRetainCount = 3
	}
	slices.SortStableFunc(c.Servers, func(a, b Server) int { return cmp.Compare(a.ID, b.ID) })
	if len(c.Servers) > 0 && !c.Distributed() {
		p.warnf("conf: only one participant listed with standaloneEnabled=true; running standalone")
	}
}

// splitList splits a comma list, trimming items and dropping empty ones.
func splitList(v string) []string {
	out := []string{}
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseInt parses a decimal Java int (optional sign), as Integer.parseInt.
func parseInt(key, v string) (int, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, numErr(key, v, err, "an integer")
	}
	return int(n), nil
}

// parseLong parses a decimal Java long (optional sign), as Long.parseLong.
func parseLong(key, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, numErr(key, v, err, "an integer")
	}
	return n, nil
}

// decodeInt parses a Java int as Integer.getInteger does (Integer.decode):
// decimal, 0x/0X/# hexadecimal or 0-prefixed octal, with optional sign.
func decodeInt(key, v string) (int, error) {
	n, err := decode(v, 32)
	if err != nil {
		return 0, numErr(key, v, err, "an integer")
	}
	return int(n), nil
}

// decodeLong is decodeInt for a Java long.
func decodeLong(key, v string) (int64, error) {
	n, err := decode(v, 64)
	if err != nil {
		return 0, numErr(key, v, err, "an integer")
	}
	return n, nil
}

// decode implements Java's Integer.decode/Long.decode radix rules.
func decode(v string, bits int) (int64, error) {
	s, neg := v, false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	base := 10
	switch {
	case strings.HasPrefix(s, "0x"), strings.HasPrefix(s, "0X"):
		base, s = 16, s[2:]
	case strings.HasPrefix(s, "#"):
		base, s = 16, s[1:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, strconv.ErrSyntax
	}
	if neg {
		s = "-" + s
	}
	return strconv.ParseInt(s, base, bits)
}

// parseHexLong parses a hexadecimal long (the membership version).
func parseHexLong(key, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 16, 64)
	if err != nil {
		return 0, numErr(key, v, err, "a hexadecimal integer")
	}
	return n, nil
}

// numErr turns a strconv error into a KeyError.
func numErr(key, v string, err error, what string) error {
	if errors.Is(err, strconv.ErrRange) {
		return keyErr(key, v, "is out of range")
	}
	return keyErr(key, v, "is not %s", what)
}

// parseBool accepts "true" or "false" in any case, as ZooKeeper does.
func parseBool(key, v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, keyErr(key, v, "is not a boolean (true or false)")
}

// parseYesNo accepts "yes"/"no" (ZooKeeper's spelling for forceSync and
// skipACL) and also "true"/"false", in any case.
func parseYesNo(key, v string) (bool, error) {
	switch {
	case strings.EqualFold(v, "yes"), strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "no"), strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, keyErr(key, v, "is not yes or no")
}

// parsePeerType accepts participant or observer in any case.
func parsePeerType(key, v string) (string, error) {
	switch t := strings.ToLower(v); t {
	case "participant", "observer":
		return t, nil
	}
	return "", keyErr(key, v, "is not participant or observer")
}

// knownUninterpreted reports whether key is a ZooKeeper key that zkserverd
// accepts without acting on it (TLS, SASL, JVM and tuning knobs, ...).
func knownUninterpreted(key string) bool {
	switch key {
	case "oraclePath",
		"quorum.cnxn.threads.size", "enforceQuota", "digest.enabled", "snapSizeLimitInKb",
		"txnLogSizeLimitInKb", "commitLogCount", "serverCnxnFactory", "maxCnxns",
		"snapshot.trust.empty", "watchManagerName", "superUser",
		"X509AuthenticationProvider.superUser", "closeSessionTxn.enabled", "leaderServes",
		"maxBatchSize", "flushDelay", "maxWriteQueuePollTime",
		"cnxTimeout", "electionPortBindRetry", "tcpKeepAlive",
		"jute.maxbuffer.extrasize",
		"emulate353TTLNodes", "requireClientAuthScheme", "allowSaslFailedClients",
		"sessionRequireClientSASLAuth", "intBufferStartingSizeBytes", "outstandingHandshake.limit",
		"learner.asyncSending", "learner.closeSocketAsync", "leader.closeSocketAsync",
		"snapshot.compression.method", "secureClientPortListenBacklog", "kinit", "ensembleAuthName":
		return true
	}
	for _, prefix := range []string{
		"ssl.", "quorum.auth.", "jvm.pause.", "metricsProvider.", "multiAddress.", "group.",
		"weight.", "admin.", "netty.", "nio.", "commitProcessor.", "connection_throttle_",
		"request_throttle_", "messageTracker.", "enforce.auth.", "kerberos.", "sasl.",
		"watcherCleanThreshold", "watcherCleanIntervalInSeconds", "watcherCleanThreadsNum",
		"fips-mode", "forward_learner_requests_to_commit_processor_disabled",
		"throttled_op_wait_time", "learnerHandler.", "follower.", "observer.",
		"usersfile.", "X509AuthenticationProvider.", "enforceQuota", "DigestAuthenticationProvider.",
	} {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}
