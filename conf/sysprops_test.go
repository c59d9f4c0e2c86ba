package conf

import (
	"reflect"
	"strings"
	"testing"
)

func TestSystemProperties(t *testing.T) {
	tests := []struct {
		name      string
		environ   []string
		want      []Property
		wantNotes int
	}{
		{"none", []string{"PATH=/bin"}, nil, 0},
		{
			"server flags then client flags, later wins",
			[]string{
				"SERVER_JVMFLAGS=-Dreadonlymode.enabled=false -Dzookeeper.snapCount=500",
				"JVMFLAGS=-Xmx1g  -Dreadonlymode.enabled=true",
			},
			[]Property{{"readonlymode.enabled", "true"}, {"zookeeper.snapCount", "500"}},
			1,
		},
		{
			"value with '=' and bare -D",
			[]string{"SERVER_JVMFLAGS=-Dzookeeper.authProvider.1=a=b -Dzookeeper.skipACL"},
			[]Property{{"zookeeper.authProvider.1", "a=b"}, {"zookeeper.skipACL", ""}},
			0,
		},
		{
			"JVM-only properties and malformed -D are noted, not applied",
			[]string{"SERVER_JVMFLAGS=-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory -Dlog4j.configuration=x -D -D=v -Djava.net.preferIPv4Stack=true"},
			nil,
			5,
		},
		{
			"first occurrence of a variable wins, as os.Getenv",
			[]string{"JVMFLAGS=-Da=1", "JVMFLAGS=-Da=2"},
			[]Property{{"a", "1"}},
			0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes := SystemProperties(tt.environ)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("props = %+v, want %+v", got, tt.want)
			}
			if len(notes) != tt.wantNotes {
				t.Fatalf("notes = %q, want %d", notes, tt.wantNotes)
			}
		})
	}
}

func TestParseAppliesSystemPropertiesBeforeTheFile(t *testing.T) {
	sys, _ := SystemProperties([]string{"SERVER_JVMFLAGS=-Dreadonlymode.enabled=true -Dzookeeper.snapCount=500 -Dzookeeper.globalOutstandingLimit=7"})
	c, _, err := Parse(strings.NewReader("snapCount=900\n"), sys...)
	if err != nil {
		t.Fatal(err)
	}
	if !c.ReadOnlyModeEnabled {
		t.Error("-Dreadonlymode.enabled=true not applied")
	}
	if c.SnapCount != 900 {
		t.Errorf("SnapCount = %d, want the file's 900", c.SnapCount)
	}
	if c.GlobalOutstandingLimit != 7 {
		t.Errorf("GlobalOutstandingLimit = %d, want 7 from -Dzookeeper.globalOutstandingLimit", c.GlobalOutstandingLimit)
	}
	if _, _, err := Parse(strings.NewReader(""), Property{"zookeeper.snapCount", "many"}); err == nil {
		t.Error("a malformed -D value parsed without error")
	}
}

func TestFromEnvReadsServerJVMFlags(t *testing.T) {
	c, _, err := FromEnv([]string{"ZOO_TICK_TIME=2000", "SERVER_JVMFLAGS=-Dreadonlymode.enabled=true"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.ReadOnlyModeEnabled {
		t.Error("SERVER_JVMFLAGS ignored by FromEnv")
	}
}
