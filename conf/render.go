package conf

import (
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
)

// Runtime carries the values the `conf` four-letter word shows that only a
// running server knows. Zero fields fall back as documented.
type Runtime struct {
	ClientPort       int    // bound client port; 0 = Config.ClientPort
	SecureClientPort int    // bound TLS client port; 0 = none, shown as -1
	DataDir          string // snapshot directory as shown; "" = absolute DataDir + "/version-2"
	DataLogDir       string // log directory as shown; "" = absolute EffectiveDataLogDir() + "/version-2"
	DataDirSize      int64  // bytes under the snapshot directory
	DataLogSize      int64  // bytes under the log directory
}

// DirSize returns the total size in bytes of the regular files under dir,
// counting what can be read and ignoring errors (0 for a missing dir).
func DirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			total += info.Size()
		}
		return nil
	})
	return total
}

// Lines renders `conf` for this configuration as ZooKeeper 3.8 prints it,
// one "key=value" per element, taking directory sizes from the disk
// (DirSize of DataDir and of the log directory) and everything else from
// the configuration. Use LinesFor to supply the values of a running server.
func (c Config) Lines() []string {
	return c.LinesFor(Runtime{
		DataDirSize: DirSize(c.DataDir),
		DataLogSize: DirSize(c.EffectiveDataLogDir()),
	})
}

// LinesFor renders `conf` with the runtime values in rt: the standalone
// block (clientPort ... serverId=0), and for an ensemble (Distributed) the
// quorum keys, "membership: " (trailing space) and one line per server,
// then "version=<hex>". ConfText joins the lines exactly as ZooKeeper
// sends them.
func (c Config) LinesFor(rt Runtime) []string {
	clientPort := rt.ClientPort
	if clientPort == 0 {
		clientPort = c.ClientPort
	}
	secure := rt.SecureClientPort
	if secure == 0 {
		secure = -1
	}
	dataDir, logDir := rt.DataDir, rt.DataLogDir
	if dataDir == "" {
		dataDir = versionDir(c.DataDir)
	}
	if logDir == "" {
		logDir = versionDir(c.EffectiveDataLogDir())
	}
	var serverID int64
	if c.Distributed() {
		serverID = c.MyID
	}
	lines := []string{
		"clientPort=" + strconv.Itoa(clientPort),
		"secureClientPort=" + strconv.Itoa(secure),
		"dataDir=" + dataDir,
		"dataDirSize=" + strconv.FormatInt(rt.DataDirSize, 10),
		"dataLogDir=" + logDir,
		"dataLogSize=" + strconv.FormatInt(rt.DataLogSize, 10),
		"tickTime=" + strconv.Itoa(c.TickTime),
		"maxClientCnxns=" + strconv.Itoa(c.MaxClientCnxns),
		"minSessionTimeout=" + strconv.Itoa(c.EffectiveMinSessionTimeout()),
		"maxSessionTimeout=" + strconv.Itoa(c.EffectiveMaxSessionTimeout()),
		"clientPortListenBacklog=" + strconv.Itoa(c.ClientPortListenBacklog),
		"serverId=" + strconv.FormatInt(serverID, 10),
	}
	if !c.Distributed() {
		return lines
	}
	return append(lines, c.quorumLines()...)
}

// quorumLines renders the ensemble part of `conf`.
func (c Config) quorumLines() []string {
	self, _ := c.Self()
	peerType := 0
	if self.Observer {
		peerType = 1
	}
	lines := []string{
		"initLimit=" + strconv.Itoa(c.InitLimit),
		"syncLimit=" + strconv.Itoa(c.SyncLimit),
		"electionAlg=" + strconv.Itoa(c.ElectionAlg),
		"electionPort=" + strconv.Itoa(self.ElectionPort),
		"quorumPort=" + strconv.Itoa(self.PeerPort),
		"peerType=" + strconv.Itoa(peerType),
		"membership: ",
	}
	for _, s := range c.Servers {
		lines = append(lines, "server."+strconv.FormatInt(s.ID, 10)+"="+s.String())
	}
	return append(lines, "version="+strconv.FormatInt(c.ConfigVersion, 16))
}

// ConfText returns the exact `conf` reply: LinesFor(rt), each followed by
// a newline except the final "version=" line of an ensemble, which
// ZooKeeper sends without one.
func (c Config) ConfText(rt Runtime) string {
	text := strings.Join(c.LinesFor(rt), "\n")
	if c.Distributed() {
		return text
	}
	return text + "\n"
}

// versionDir is how ZooKeeper shows a data directory: absolute, with the
// "version-2" subdirectory its file format version adds.
func versionDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Join(dir, "version-2")
}
