package main

import (
	"io"
	"strings"
	"testing"
)

// TestClusterMembersFlag: --members sets the ensemble size, --size stays an
// alias of it, and the two given with different values are refused before
// anything starts.
func TestClusterMembersFlag(t *testing.T) {
	cases := []struct {
		args    []string
		members int
		err     string
	}{
		{args: nil, members: 3},
		{args: []string{"--members", "5"}, members: 5},
		{args: []string{"--size", "5"}, members: 5},
		{args: []string{"--members", "5", "--size", "5"}, members: 5},
		{args: []string{"--members", "5", "--size", "3"}, err: "--members 5 and --size 3 disagree"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var f clusterFlags
			cmd := clusterCommand(&f, io.Discard)
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			err := resolveMembers(cmd, &f)
			switch {
			case c.err != "":
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
			case err != nil:
				t.Fatal(err)
			case f.size != c.members:
				t.Fatalf("members = %d, want %d", f.size, c.members)
			}
			if c.err == "" {
				if got := len(clusterConfigs(f)); got != c.members {
					t.Fatalf("%d member configurations, want %d", got, c.members)
				}
			}
		})
	}
}
