// Package conf reads zoo.cfg: ZooKeeper's Java-properties configuration
// file, with ZooKeeper's key spellings and defaults, and validates it.
//
// Usage:
//
//	cfg, warnings, err := conf.Load("zoo.cfg") // or conf.Default() + flags
//	for _, w := range warnings { log.Warn(w) }   // unknown keys, adjusted values
//	if err == nil { err = cfg.Validate() }
//
// Parse accepts every key of a standalone or ensemble ZooKeeper 3.8/3.9
// configuration. Keys ZooKeeper turns into JVM system properties
// (snapCount, 4lw.commands.whitelist, admin.*, authProvider.N, ...) are
// accepted both bare and with the "zookeeper." prefix. Keys that are known
// but have no effect here, and unknown keys, are kept in Config.Extra;
// unknown keys also produce a warning, which names the known key an
// unknown one is likely a mistake for ("did you mean tickTime?"). A value
// that does not parse is an error naming the key and the value. Load
// requires a dataDir line, as ZooKeeper does, and names the file in every
// error (KeyError.Source; WithSource lets a caller name the file or flag
// behind Validate's errors).
//
// Config.Lines renders the `conf` four-letter word. The package imports
// only the standard library.
package conf
