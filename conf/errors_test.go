package conf

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestWithSource: the source goes into every key error of a joined error
// (only those of the named keys when keys are given), an error that names
// its source keeps it, and an error about no key is wrapped.
func TestWithSource(t *testing.T) {
	bad := Default()
	bad.TickTime = 0
	bad.ClientPort = 70000
	tests := []struct {
		name string
		err  func() error
		do   func(error) error
		want []string // substrings of the result, in order, the first at its start
	}{
		{"all keys", bad.Validate, func(e error) error { return WithSource(e, "/etc/zoo.cfg") },
			[]string{`conf: /etc/zoo.cfg: tickTime: "0"`, `conf: /etc/zoo.cfg: clientPort: "70000"`}},
		{"a flag, then the file", bad.Validate, func(e error) error {
			return WithSource(WithSource(e, "--client-port", "clientPort"), "/etc/zoo.cfg")
		}, []string{`conf: /etc/zoo.cfg: tickTime: "0"`, `conf: --client-port: clientPort: "70000"`}},
		{"wrapped", func() error { return fmt.Errorf("start: %w", keyErr("tickTime", "x", "is bad")) },
			func(e error) error { return WithSource(e, "f.cfg") }, []string{`conf: f.cfg: start: conf: tickTime: "x" is bad`}},
		{"wrapped, named", func() error { return fmt.Errorf("start: %w", WithSource(keyErr("tickTime", "x", "is bad"), "a.cfg")) },
			func(e error) error { return WithSource(e, "f.cfg") }, []string{`start: conf: a.cfg: tickTime: "x" is bad`}},
		{"no key", func() error { return errors.New("conf: line 3: bad escape") },
			func(e error) error { return WithSource(e, "f.cfg") }, []string{"conf: f.cfg: line 3: bad escape"}},
		{"environment variable", func() error { return envErr("ZOO_TICK_TIME", "tickTime", "x", "is bad") },
			func(e error) error { return WithSource(e, "f.cfg") }, []string{`conf: ZOO_TICK_TIME (tickTime): "x" is bad`}},
		{"nil", func() error { return nil }, func(e error) error { return WithSource(e, "f.cfg") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do(tt.err())
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			text := err.Error()
			if !strings.HasPrefix(text, tt.want[0]) {
				t.Fatalf("%q does not start with %q", text, tt.want[0])
			}
			for _, w := range tt.want {
				i := strings.Index(text, w)
				if i < 0 {
					t.Fatalf("%q does not contain %q", err.Error(), w)
				}
				text = text[i+len(w):]
			}
		})
	}
}

// TestLoadEnvFileNeedsDataDir: a zoo.cfg mounted in the image's conf
// directory must set dataDir too (ZooKeeper's image does not add one to a
// mounted file).
func TestLoadEnvFileNeedsDataDir(t *testing.T) {
	confDir := t.TempDir()
	path := filepath.Join(confDir, "zoo.cfg")
	writeFile(t, path, "tickTime=2000\n")
	_, _, err := LoadEnv([]string{"ZOO_CONF_DIR=" + confDir, "ZOO_DATA_DIR=" + t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "conf: "+path+": dataDir is not set") {
		t.Fatalf("LoadEnv = %v, want dataDir not set in %s", err, path)
	}
}
