package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// debianPackages are the clients and the reference server the suite needs.
var debianPackages = []string{
	"zookeeper",                 // Apache ZooKeeper 3.8 server jars + zkCli.sh
	"zookeeper-bin",             // C client cli_mt
	"python3-kazoo",             // kazoo for /usr/bin/python3
	"python3-pure-sasl",         // kazoo's SASL (kazoo/sasl)
	"libcurator-framework-java", // Curator 5
	"libcurator-recipes-java",   // Curator 5 recipes
	"openjdk-17-jdk-headless",   // javac for the Curator program
	"libslf4j-java",             // slf4j-nop / slf4j-simple bindings
}

// Client programs from those packages.
const (
	systemPython = "/usr/bin/python3"
	zkCliScript  = "/usr/share/zookeeper/bin/zkCli.sh"
	cliMt        = "/usr/lib/zookeeper/bin/cli_mt"
)

// javaClasspath lists the Debian jars the Java scenario program needs
// (the ZooKeeper client and Curator).
var javaClasspath = []string{
	"/usr/share/java/curator-recipes.jar",
	"/usr/share/java/curator-framework.jar",
	"/usr/share/java/curator-client.jar",
	"/usr/share/java/zookeeper.jar",
	"/usr/share/java/zookeeper-jute.jar",
	"/usr/share/java/netty-codec.jar", // the Netty client socket (TLS), see nettyJars
	"/usr/share/java/netty-resolver.jar",
	"/usr/share/java/guava.jar",
	"/usr/share/java/slf4j-api.jar",
	"/usr/share/java/slf4j-nop.jar",
}

// missingPackages returns the packages dpkg does not report as installed.
func missingPackages(ctx context.Context) []string {
	var missing []string
	for _, p := range debianPackages {
		out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || !strings.Contains(string(out), "install ok installed") {
			missing = append(missing, p)
		}
	}
	return missing
}

// installPackages installs whatever is missing with apt-get (needs root).
func installPackages(ctx context.Context, logf func(string, ...any)) error {
	missing := missingPackages(ctx)
	if len(missing) == 0 {
		return nil
	}
	logf("installing Debian packages: %s", strings.Join(missing, " "))
	if os.Geteuid() != 0 {
		return fmt.Errorf("install %s: not root; install them with apt-get first", strings.Join(missing, " "))
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	steps := [][]string{
		{"apt-get", "update", "-qq"},
		append([]string{"apt-get", "install", "-y", "-qq", "--no-install-recommends"}, missing...),
	}
	for _, argv := range steps {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, tail(string(out), 20))
		}
	}
	if still := missingPackages(ctx); len(still) > 0 {
		return fmt.Errorf("still missing after apt-get: %s", strings.Join(still, " "))
	}
	return nil
}

// artifacts are the programs built for one run.
type artifacts struct {
	zkserverd string // the server binary
	goclient  string // the go-zookeeper scenario program
	classes   string // compiled JavaCompat (Java client and Curator scenarios)
}

// build compiles zkserverd, the Go scenario program and the Java scenario
// program into work.
func build(ctx context.Context, root, work string) (artifacts, error) {
	a := artifacts{
		zkserverd: filepath.Join(work, "bin", "zkserverd"),
		goclient:  filepath.Join(work, "bin", "goclient"),
		classes:   filepath.Join(work, "classes"),
	}
	steps := [][]string{
		{"go", "build", "-o", a.zkserverd, "./cmd/zkserverd"},
		{"go", "build", "-o", a.goclient, "./test/compat/goclient"},
		{"javac", "-nowarn", "-cp", strings.Join(javaClasspath, ":"), "-d", a.classes,
			filepath.Join(root, "test", "compat", "java", "JavaCompat.java")},
	}
	for _, argv := range steps {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return a, fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, tail(string(out), 30))
		}
	}
	return a, nil
}

// findRoot walks up from the working directory to the module root.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "cmd", "zkserverd")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the zkserverd checkout (no go.mod with cmd/zkserverd above the working directory)")
		}
		dir = parent
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
