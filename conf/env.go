package conf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// This file reads the environment variables of the official ZooKeeper
// Docker image (Docker Hub "zookeeper", 3.8/3.9 tags). That image's
// docker-entrypoint.sh writes $ZOO_CONF_DIR/zoo.cfg from the variables
// when no zoo.cfg exists, and $ZOO_DATA_DIR/myid from ZOO_MY_ID when no
// myid exists. RenderEnvConfig produces the same zoo.cfg text, FromEnv
// parses it with Parse, and LoadEnv adds the two "only if absent" rules.

// envVar is one variable the image turns into a zoo.cfg line.
type envVar struct {
	name string // e.g. "ZOO_TICK_TIME"
	key  string // the zoo.cfg key it sets
	def  string // the image's default (its Dockerfile ENV)
}

// Names of the variables that are not a single zoo.cfg line.
const (
	envMyID    = "ZOO_MY_ID"
	envServers = "ZOO_SERVERS"
	envExtra   = "ZOO_CFG_EXTRA"
	envConfDir = "ZOO_CONF_DIR"
	envDataDir = "ZOO_DATA_DIR"
	env4LW     = "ZOO_4LW_COMMANDS_WHITELIST"
)

// Image defaults that are not a zoo.cfg line.
const (
	// DefaultEnvConfDir is the image's ZOO_CONF_DIR.
	DefaultEnvConfDir = "/conf"
	// DefaultEnvServers is the server list the image's entrypoint uses when
	// ZOO_SERVERS is empty: a single member that serves clients on 2181.
	DefaultEnvServers = "server.1=localhost:2888:3888;2181"
	// DefaultEnvMyID is the id the image writes to myid when ZOO_MY_ID is
	// empty.
	DefaultEnvMyID = "1"
)

// envScalars lists, in the entrypoint's order, the variables written as
// "key=value" before the server lines.
func envScalars() []envVar {
	return []envVar{
		{envDataDir, "dataDir", "/data"},
		{"ZOO_DATA_LOG_DIR", "dataLogDir", "/datalog"},
		{"ZOO_TICK_TIME", "tickTime", "2000"},
		{"ZOO_INIT_LIMIT", "initLimit", "5"},
		{"ZOO_SYNC_LIMIT", "syncLimit", "2"},
		{"ZOO_AUTOPURGE_SNAPRETAINCOUNT", "autopurge.snapRetainCount", "3"},
		{"ZOO_AUTOPURGE_PURGEINTERVAL", "autopurge.purgeInterval", "0"},
		{"ZOO_MAX_CLIENT_CNXNS", "maxClientCnxns", "60"},
		{"ZOO_STANDALONE_ENABLED", "standaloneEnabled", "true"},
		{"ZOO_ADMINSERVER_ENABLED", "admin.enableServer", "true"},
	}
}

// EnvLogDir names the directory of the log file, as in the official
// image (ZOO_LOG_DIR). The command reads it, whatever the configuration's
// source; it alone does not make the server read the other variables.
const EnvLogDir = "ZOO_LOG_DIR"

// envIgnored lists variables of the official image (any version) that
// zkserverd accepts but does not act on, with the reason given in the
// warning FromEnv returns when one is set.
func envIgnored(name string) (reason string, ok bool) {
	switch name {
	case "ZOO_LOG4J_PROP", "ZOO_LOG_LEVEL", "ZOO_LOG_APPENDER":
		return "zkserverd has no log4j configuration; use --log-level (levels per component) and ZOO_LOG_DIR or --log-file", true
	case "ZOO_USER":
		return "the container's user is chosen with --user", true
	case "ZOO_PORT":
		return "it set clientPort only in the 3.4 image; use ZOO_SERVERS (server.N=...;port) or ZOO_CFG_EXTRA=clientPort=N", true
	}
	return "", false
}

// EnvError reports a bad value that came from an environment variable.
// Err is usually a *KeyError about the zoo.cfg key the variable sets;
// errors.Is(err, ErrInvalid) holds for every EnvError FromEnv returns.
type EnvError struct {
	Var string // the variable, e.g. "ZOO_TICK_TIME"
	Err error  // what is wrong
}

// Error returns e.g. `conf: ZOO_TICK_TIME (tickTime): "abc" is not an integer`.
func (e *EnvError) Error() string {
	var ke *KeyError
	if errors.As(e.Err, &ke) {
		return fmt.Sprintf("conf: %s (%s): %q %s", e.Var, ke.Key, ke.Value, ke.Reason)
	}
	return fmt.Sprintf("conf: %s: %v", e.Var, e.Err)
}

// Unwrap returns Err.
func (e *EnvError) Unwrap() error { return e.Err }

// envErr builds an *EnvError around a *KeyError.
func envErr(name, key, value, reason string, args ...any) error {
	return &EnvError{Var: name, Err: keyErr(key, value, reason, args...)}
}

// environment holds the ZOO_ variables of an environ list; the first
// occurrence of a name wins, as with os.Getenv.
type environment map[string]string

// readEnviron collects the ZOO_ variables of environ ("NAME=value" items).
func readEnviron(environ []string) environment {
	env := environment{}
	for _, item := range environ {
		name, value, ok := strings.Cut(item, "=")
		if !ok || !strings.HasPrefix(name, "ZOO_") {
			continue
		}
		if _, seen := env[name]; !seen {
			env[name] = value
		}
	}
	return env
}

// get returns the variable's value, or def when it is unset or empty (an
// empty value counts as unset).
func (env environment) get(name, def string) string {
	if v := env[name]; v != "" {
		return v
	}
	return def
}

// EnvPresent reports whether environ sets (to a non-empty value) any of
// the variables FromEnv reads: ZOO_MY_ID, ZOO_SERVERS, ZOO_CFG_EXTRA,
// ZOO_CONF_DIR, ZOO_4LW_COMMANDS_WHITELIST or one of the scalar variables
// (ZOO_DATA_DIR, ZOO_TICK_TIME, ...). Other ZOO_ names, such as the
// ZOO_SERVICE_HOST a Kubernetes service named "zoo" injects, do not count.
func EnvPresent(environ []string) bool {
	env := readEnviron(environ)
	for name, value := range env {
		if value != "" && envKnown(name) {
			return true
		}
	}
	return false
}

// envKnown reports whether FromEnv reads the variable.
func envKnown(name string) bool {
	switch name {
	case envMyID, envServers, envExtra, envConfDir, env4LW:
		return true
	}
	for _, v := range envScalars() {
		if v.name == name {
			return true
		}
	}
	return false
}

// envLine is one rendered zoo.cfg line and the variable it came from.
type envLine struct {
	text string
	from string
}

// RenderEnvConfig returns the zoo.cfg text the official image's entrypoint
// writes for environ: the scalar variables as key=value lines (image
// defaults for unset or empty ones), one line per ZOO_SERVERS entry
// (default DefaultEnvServers), 4lw.commands.whitelist when
// ZOO_4LW_COMMANDS_WHITELIST is set, then one line per ZOO_CFG_EXTRA
// entry. Entries are separated by spaces, tabs or newlines, as the shell
// splits them. It checks only what would break the file's line structure
// (line breaks in a scalar, a trailing backslash, a ZOO_SERVERS entry that
// is not server.N=...); FromEnv checks the values.
func RenderEnvConfig(environ []string) (string, error) {
	lines, err := renderEnv(readEnviron(environ))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// renderEnv builds the zoo.cfg lines in the entrypoint's order.
func renderEnv(env environment) ([]envLine, error) {
	var lines []envLine
	for _, v := range envScalars() {
		value := env.get(v.name, v.def)
		if err := checkScalar(v.name, v.key, value); err != nil {
			return nil, err
		}
		lines = append(lines, envLine{v.key + "=" + value, v.name})
	}
	servers, err := renderServers(env.get(envServers, DefaultEnvServers))
	if err != nil {
		return nil, err
	}
	lines = append(lines, servers...)
	if w := env[env4LW]; w != "" {
		if err := checkScalar(env4LW, "4lw.commands.whitelist", w); err != nil {
			return nil, err
		}
		lines = append(lines, envLine{"4lw.commands.whitelist=" + w, env4LW})
	}
	for _, entry := range splitWords(env[envExtra]) {
		if err := checkEntry(envExtra, entry); err != nil {
			return nil, err
		}
		lines = append(lines, envLine{entry, envExtra})
	}
	return lines, nil
}

// renderServers turns ZOO_SERVERS into server.N lines.
func renderServers(value string) ([]envLine, error) {
	var lines []envLine
	for _, entry := range splitWords(value) {
		if err := checkEntry(envServers, entry); err != nil {
			return nil, err
		}
		key, _, ok := strings.Cut(entry, "=")
		if !ok || !strings.HasPrefix(key, "server.") {
			return nil, envErr(envServers, "server.N", entry,
				"is not server.N=host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]")
		}
		lines = append(lines, envLine{entry, envServers})
	}
	return lines, nil
}

// splitWords splits a list variable on spaces, tabs and newlines (the
// shell's default IFS). Unlike the shell, it never expands wildcards.
func splitWords(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' })
}

// checkScalar rejects a value that would not stay on its one zoo.cfg line.
func checkScalar(name, key, value string) error {
	if strings.ContainsAny(value, "\n\r") {
		return envErr(name, key, value, "contains a line break")
	}
	if oddTrailingBackslashes(value) {
		return envErr(name, key, value, "ends in a backslash, which would join it to the next line")
	}
	return nil
}

// checkEntry rejects a list entry that would not stay on its own line.
func checkEntry(name, entry string) error {
	key := entry
	if k, _, ok := strings.Cut(entry, "="); ok {
		key = k
	}
	if strings.ContainsRune(entry, '\r') {
		return envErr(name, key, entry, "contains a carriage return")
	}
	if oddTrailingBackslashes(entry) {
		return envErr(name, key, entry, "ends in a backslash, which would join it to the next line")
	}
	return nil
}

// FromEnv builds the configuration the official ZooKeeper image would run
// with for environ (os.Environ() form): RenderEnvConfig's text parsed by
// Parse, MyID from ZOO_MY_ID (default 1, as the image writes to myid),
// then Validate. Errors name the variable (*EnvError). Warnings are
// Parse's plus one per ZOO_ variable that is ignored or unknown. FromEnv
// reads no files; LoadEnv applies the image's rules about an existing
// zoo.cfg or myid.
func FromEnv(environ []string) (cfg Config, warnings []string, err error) {
	env := readEnviron(environ)
	sys, _ := SystemProperties(environ)
	cfg, warnings, origins, err := parseEnv(env, sys)
	if err != nil {
		return Config{}, nil, err
	}
	if cfg.MyID, err = envMyIDValue(env); err != nil {
		return Config{}, nil, err
	}
	if err := validateEnv(cfg, origins); err != nil {
		return Config{}, nil, err
	}
	return cfg, warnings, nil
}

// parseEnv renders and parses the environment. origins maps each zoo.cfg
// key (also without its "zookeeper." prefix, and "server.N" for any server
// line) to the variable whose line set it last.
func parseEnv(env environment, sys []Property) (Config, []string, map[string]string, error) {
	lines, err := renderEnv(env)
	if err != nil {
		return Config{}, nil, nil, err
	}
	origins := map[string]string{envMyIDKey: envMyID}
	var text strings.Builder
	for _, l := range lines {
		text.WriteString(l.text + "\n")
		p, err := splitProperty(strings.TrimLeft(l.text, " \t\f"))
		if err != nil {
			key, _, _ := strings.Cut(l.text, "=")
			return Config{}, nil, nil, envErr(l.from, key, l.text, "has a malformed \\uxxxx escape")
		}
		origins[p.key] = l.from
		origins[strings.TrimPrefix(p.key, sysPropPrefix)] = l.from
		if strings.HasPrefix(p.key, "server.") {
			origins["server.N"] = l.from
		}
	}
	cfg, warnings, err := Parse(strings.NewReader(text.String()), sys...)
	if err != nil {
		return Config{}, nil, nil, attribute(err, origins)
	}
	return cfg, append(warnings, envWarnings(env)...), origins, nil
}

// envMyIDKey is the key Validate uses for the server id.
const envMyIDKey = "myid"

// envMyIDValue parses ZOO_MY_ID (default 1) as ZooKeeper reads myid.
func envMyIDValue(env environment) (int64, error) {
	v := env.get(envMyID, DefaultEnvMyID)
	id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, envErr(envMyID, envMyIDKey, v, "is not a number")
	}
	return id, nil
}

// validateEnv runs Validate and names the variable behind each problem.
func validateEnv(cfg Config, origins map[string]string) error {
	err := cfg.Validate()
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return attribute(err, origins)
	}
	errs := joined.Unwrap()
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = attribute(e, origins)
	}
	return errors.Join(out...)
}

// attribute wraps a *KeyError in an *EnvError naming the variable that set
// its key; other errors (which already name their key) are returned as
// they are.
func attribute(err error, origins map[string]string) error {
	var ke *KeyError
	if errors.As(err, &ke) {
		if name, ok := origins[ke.Key]; ok {
			return &EnvError{Var: name, Err: err}
		}
	}
	return err
}

// envWarnings returns one warning per set ZOO_ variable that FromEnv does
// not read, sorted by name.
func envWarnings(env environment) []string {
	var names []string
	for name := range env {
		if !envKnown(name) && name != EnvLogDir {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []string
	for _, name := range names {
		if reason, ok := envIgnored(name); ok {
			out = append(out, fmt.Sprintf("conf: %s is ignored: %s", name, reason))
			continue
		}
		out = append(out, fmt.Sprintf("conf: unknown variable %s (ignored)", name))
	}
	return out
}

// EnvConfigFile returns the zoo.cfg path the image checks:
// $ZOO_CONF_DIR/zoo.cfg (default /conf/zoo.cfg).
func EnvConfigFile(environ []string) string {
	return filepath.Join(readEnviron(environ).get(envConfDir, DefaultEnvConfDir), "zoo.cfg")
}

// LoadEnv resolves the configuration as the official image does at start:
// if EnvConfigFile exists, that file is parsed and every other ZOO_
// variable except ZOO_MY_ID is ignored; otherwise the configuration comes
// from FromEnv's rendering. When the configuration lists servers, MyID
// comes from dataDir/myid if that file exists (the image never overwrites
// it), else from ZOO_MY_ID (default 1). The result is validated.
func LoadEnv(environ []string) (Config, []string, error) {
	env := readEnviron(environ)
	sys, _ := SystemProperties(environ)
	path := EnvConfigFile(environ)
	cfg, warnings, origins, err := loadEnvFile(path, sys)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		if cfg, warnings, origins, err = parseEnv(env, sys); err != nil {
			return Config{}, nil, err
		}
	default:
		return Config{}, nil, err
	}
	if len(cfg.Servers) > 0 {
		var w []string
		var fromFile bool
		if cfg.MyID, fromFile, w, err = resolveMyID(cfg.DataDir, env); err != nil {
			return Config{}, nil, err
		}
		if fromFile && origins != nil {
			delete(origins, envMyIDKey) // a bad id is the file's, not ZOO_MY_ID's
		}
		warnings = append(warnings, w...)
	}
	if origins == nil {
		if err := cfg.Validate(); err != nil {
			return Config{}, nil, WithSource(err, path)
		}
		return cfg, warnings, nil
	}
	if err := validateEnv(cfg, origins); err != nil {
		return Config{}, nil, err
	}
	return cfg, warnings, nil
}

// loadEnvFile parses path if it is there; a missing file gives an error
// wrapping fs.ErrNotExist. origins is always nil (the file's keys come
// from no variable).
func loadEnvFile(path string, sys []Property) (Config, []string, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, nil, nil, fmt.Errorf("conf: %w", err)
	}
	defer f.Close()
	cfg, warnings, err := parseFile(f, path, sys, "")
	if err != nil {
		return Config{}, nil, nil, err
	}
	return cfg, warnings, nil, nil
}

// resolveMyID returns the id in dataDir/myid when that file exists
// (fromFile), else ZOO_MY_ID's; it warns when ZOO_MY_ID is set and the
// file disagrees.
func resolveMyID(dataDir string, env environment) (id int64, fromFile bool, warnings []string, err error) {
	id, err = LoadMyID(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		id, err = envMyIDValue(env)
		return id, false, nil, err
	}
	if err != nil {
		return 0, true, nil, err
	}
	if v := env[envMyID]; v != "" && strings.TrimSpace(v) != strconv.FormatInt(id, 10) {
		warnings = append(warnings, fmt.Sprintf("conf: %s=%s is ignored: %s says %d (the image writes myid only when it is absent)",
			envMyID, v, filepath.Join(dataDir, "myid"), id))
	}
	return id, true, warnings, nil
}
