package conf

import (
	"errors"
	"math"
	"strconv"
)

// Validate checks ranges and consistency and returns every problem found
// (joined; each a *KeyError naming the key), or nil. Ports must be in
// 1..65535, except that clientPort, admin.serverPort and
// metricsProvider.httpPort may be 0 ("pick a free port") and
// secureClientPort and observerMasterPort 0 ("off").
func (c Config) Validate() error {
	v := &validator{}
	c.validateCore(v)
	c.validatePorts(v)
	c.validateLimits(v)
	c.validateEnsemble(v)
	c.validateSSL(v)
	c.validateSASL(v)
	c.validateQuorum(v)
	return errors.Join(v.errs...)
}

// validator collects errors.
type validator struct{ errs []error }

func (v *validator) check(ok bool, key string, value any, reason string, args ...any) {
	if !ok {
		v.errs = append(v.errs, keyErr(key, toString(value), reason, args...))
	}
}

func toString(value any) string {
	switch x := value.(type) {
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return x
	}
	return ""
}

func (c Config) validateCore(v *validator) {
	v.check(c.TickTime > 0, "tickTime", c.TickTime, "must be greater than 0")
	v.check(c.DataDir != "", "dataDir", c.DataDir, "must be set")
	v.check(c.MinSessionTimeout >= -1, "minSessionTimeout", c.MinSessionTimeout, "must not be negative")
	v.check(c.MaxSessionTimeout >= -1, "maxSessionTimeout", c.MaxSessionTimeout, "must not be negative")
	if c.TickTime > 0 && c.MinSessionTimeout >= -1 && c.MaxSessionTimeout >= -1 {
		lo, hi := c.EffectiveMinSessionTimeout(), c.EffectiveMaxSessionTimeout()
		v.check(lo <= hi, "minSessionTimeout", lo, "is larger than maxSessionTimeout (%d)", hi)
		v.check(hi <= math.MaxInt32, "maxSessionTimeout", hi, "does not fit in 32 bits")
	}
	v.check(c.ElectionAlg == 3, "electionAlg", c.ElectionAlg, "is not supported (only 3 is)")
	v.check(c.PeerType == "participant" || c.PeerType == "observer", "peerType", c.PeerType,
		"is not participant or observer")
}

func (c Config) validatePorts(v *validator) {
	port := func(key string, p int, zeroOK bool) {
		lo := 1
		if zeroOK {
			lo = 0
		}
		v.check(p >= lo && p <= 65535, key, p, "is not a port number (%d..65535)", lo)
	}
	port("clientPort", c.ClientPort, true)
	port("secureClientPort", c.SecureClientPort, true)
	port("observerMasterPort", c.ObserverMasterPort, true)
	port("admin.serverPort", c.AdminServerPort, true)
	port("metricsProvider.httpPort", c.MetricsHTTPPort, true)
	for _, s := range c.Servers {
		key := "server." + strconv.FormatInt(s.ID, 10)
		port(key, s.PeerPort, false)
		port(key, s.ElectionPort, false)
		if s.ClientPort != 0 {
			port(key, s.ClientPort, false)
		}
	}
}

func (c Config) validateLimits(v *validator) {
	v.check(c.MaxClientCnxns >= 0, "maxClientCnxns", c.MaxClientCnxns, "must not be negative")
	v.check(c.GlobalOutstandingLimit > 0, "globalOutstandingLimit", c.GlobalOutstandingLimit, "must be greater than 0")
	v.check(c.SnapCount >= 2, "snapCount", c.SnapCount, "must be at least 2")
	v.check(c.PreAllocSize > 0, "preAllocSize", c.PreAllocSize, "must be greater than 0")
	v.check(c.WALSegmentSizeBytes == 0 || c.WALSegmentSizeBytes >= MinWALSegmentSize && c.WALSegmentSizeBytes <= MaxWALSegmentSize,
		"wal.segmentSizeBytes", c.WALSegmentSizeBytes, "must be 0 (the default, 64 MiB) or between %d (1 MiB) and %d (1 GiB)", MinWALSegmentSize, MaxWALSegmentSize)
	v.check(c.MemoryLimitBytes == 0 || c.MemoryLimitBytes >= MinMemoryLimit,
		"memory.limitBytes", c.MemoryLimitBytes, "must be 0 (no limit of its own) or at least %d (16 MiB)", MinMemoryLimit)
	v.check(c.AutopurgeSnapRetainCount >= 3, "autopurge.snapRetainCount", c.AutopurgeSnapRetainCount, "must be at least 3")
	v.check(c.AutopurgePurgeInterval >= 0, "autopurge.purgeInterval", c.AutopurgePurgeInterval, "must not be negative")
	v.check(c.JuteMaxBuffer > 0, "jute.maxbuffer", c.JuteMaxBuffer, "must be greater than 0")
	v.check(c.LargeRequestMaxBytes > 0, "largeRequestMaxBytes", c.LargeRequestMaxBytes, "must be greater than 0")
	v.check(c.LargeRequestThreshold >= -1, "largeRequestThreshold", c.LargeRequestThreshold, "must be -1 or more")
	v.check(c.SessionlessCnxnTimeout > 0, "nio.sessionlessCnxnTimeout", c.SessionlessCnxnTimeout, "must be greater than 0")
	v.check(c.ContainerCheckIntervalMs > 0, "znode.container.checkIntervalMs", c.ContainerCheckIntervalMs, "must be greater than 0")
	v.check(c.ContainerMaxPerMinute > 0, "znode.container.maxPerMinute", c.ContainerMaxPerMinute, "must be greater than 0")
	v.check(c.ContainerMaxNeverUsedIntervalMs >= 0, "znode.container.maxNeverUsedIntervalMs", c.ContainerMaxNeverUsedIntervalMs, "must not be negative")
	v.check(c.AdminIdleTimeout >= 0, "admin.idleTimeout", c.AdminIdleTimeout, "must not be negative")
	v.check(c.InitLimit >= 0, "initLimit", c.InitLimit, "must not be negative")
	v.check(c.SyncLimit >= 0, "syncLimit", c.SyncLimit, "must not be negative")
	v.check(c.ConnectToLearnerMasterLimit >= 0, "connectToLearnerMasterLimit", c.ConnectToLearnerMasterLimit, "must not be negative")
}

func (c Config) validateEnsemble(v *validator) {
	maxID := int64(255)
	if c.ExtendedTypesEnabled {
		maxID = 254 // 0xff in the top byte of an ephemeralOwner marks TTL nodes
	}
	seen := make(map[int64]bool, len(c.Servers))
	for _, s := range c.Servers {
		key := "server." + strconv.FormatInt(s.ID, 10)
		v.check(s.ID >= 1 && s.ID <= maxID, key, s.String(), "has server id %d outside 1..%d", s.ID, maxID)
		v.check(!seen[s.ID], key, s.String(), "repeats server id %d", s.ID)
		seen[s.ID] = true
	}
	if len(c.Servers) == 0 {
		return
	}
	participants, observers := c.Participants(), len(c.Servers)-c.Participants()
	v.check(participants > 0, "server.N", "", "lists only observers")
	v.check(!(participants == 1 && c.StandaloneEnabled && observers > 0), "server.N", "",
		"lists observers but a single participant (no quorum)")
	if c.Distributed() {
		v.check(c.InitLimit > 0, "initLimit", c.InitLimit, "must be greater than 0 for an ensemble")
		v.check(c.SyncLimit > 0, "syncLimit", c.SyncLimit, "must be greater than 0 for an ensemble")
	}
	if c.MyID != 0 {
		_, ok := c.Self()
		v.check(ok, "myid", c.MyID, "is not listed in any server.N line")
	}
}
