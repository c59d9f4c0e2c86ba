package conf

import (
	"strings"
)

// This file reads the JVM system properties a ZooKeeper installation passes
// to its server: zkServer.sh runs java with $SERVER_JVMFLAGS followed by
// $JVMFLAGS, unquoted, so the shell splits both on white space and a later
// -Dname=value replaces an earlier one. ZooKeeper reads many settings only
// as system properties (readonlymode.enabled, zookeeper.authProvider.N,
// zookeeper.ssl.*, ...), and a zoo.cfg key it does not know becomes the
// system property "zookeeper." + key, overriding a -D of that name. So
// zkserverd applies these properties under the zoo.cfg key of the same
// name (with or without the "zookeeper." prefix) before the file's lines:
// the file wins where both set a value.

// Names of the environment variables zkServer.sh passes to the JVM.
const (
	envServerJVMFlags = "SERVER_JVMFLAGS"
	envJVMFlags       = "JVMFLAGS"
)

// Property is one JVM system property, -DKey=Value.
type Property struct {
	Key, Value string
}

// SystemProperties returns the -D properties of SERVER_JVMFLAGS and then
// JVMFLAGS in environ (os.Environ() form), a later one of the same name
// replacing an earlier one, and notes naming the flags it ignores: JVM
// options that are not -D (-Xmx, -XX:..., -cp) and properties that only a
// JVM reads (logging, JMX, java.*, the connection factory classes).
func SystemProperties(environ []string) (props []Property, notes []string) {
	index := make(map[string]int)
	for _, name := range []string{envServerJVMFlags, envJVMFlags} {
		for _, word := range strings.Fields(lookupEnv(environ, name)) {
			p, ok := systemProperty(word)
			switch {
			case !ok:
				notes = append(notes, "conf: "+name+": "+word+" is a JVM option; ignored")
			case jvmOnlyProperty(p.Key):
				notes = append(notes, "conf: "+name+": -D"+p.Key+" only matters to a JVM; ignored")
			default:
				if i, dup := index[p.Key]; dup {
					props[i].Value = p.Value
					continue
				}
				index[p.Key] = len(props)
				props = append(props, p)
			}
		}
	}
	return props, notes
}

// systemProperty parses one -Dname[=value] word; a -D without '=' sets the
// empty string, as java does.
func systemProperty(word string) (Property, bool) {
	rest, ok := strings.CutPrefix(word, "-D")
	if !ok || rest == "" || rest[0] == '=' {
		return Property{}, false
	}
	key, value, _ := strings.Cut(rest, "=")
	return Property{Key: key, Value: value}, true
}

// jvmOnlyProperty reports whether a system property configures only the
// JVM or ZooKeeper's Java plumbing (logging, JMX, socket classes), with
// nothing for zkserverd to do.
func jvmOnlyProperty(key string) bool {
	switch key {
	case "zookeeper.serverCnxnFactory", "zookeeper.clientCnxnSocket", "zookeeper.root.logger",
		"zookeeper.log.dir", "zookeeper.log.file", "zookeeper.log.threshold", "zookeeper.console.threshold",
		"zookeeper.jmx.log4j.disable", "zookeeper.datadir.autocreate", "zookeeper.admin.serverCnxnFactory":
		return true
	}
	for _, prefix := range []string{
		"java.net.", "java.awt.", "java.io.", "java.util.", "javax.management.", "jdk.", "sun.",
		"com.sun.management.", "log4j", "logback.", "zookeeper.tracelog.",
	} {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// toProperties converts system properties to the parser's form.
func toProperties(sys []Property) []property {
	out := make([]property, len(sys))
	for i, p := range sys {
		out[i] = property{key: p.Key, value: p.Value}
	}
	return out
}

// propertyMap returns sys as a map (nil when empty).
func propertyMap(sys []Property) map[string]string {
	if len(sys) == 0 {
		return nil
	}
	m := make(map[string]string, len(sys))
	for _, p := range sys {
		m[p.Key] = p.Value
	}
	return m
}

// lookupEnv returns the first value of name in environ, as os.Getenv does.
func lookupEnv(environ []string, name string) string {
	for _, item := range environ {
		if k, v, ok := strings.Cut(item, "="); ok && k == name {
			return v
		}
	}
	return ""
}
