package zkproc

import (
	"errors"
	"strings"
	"testing"
)

func TestGate(t *testing.T) {
	missing := errors.New("jar missing")
	for _, tt := range []struct {
		err      error
		env      string
		fail     bool
		hasMsg   bool
		mentions string
	}{
		{nil, "", false, false, ""},
		{nil, "1", false, false, ""},
		{missing, "", false, true, "set " + RequireEnv + "=1"},
		{missing, "0", false, true, "jar missing"},
		{missing, "1", true, true, "jar missing"},
	} {
		fail, msg := gate(tt.err, tt.env)
		if fail != tt.fail || (msg != "") != tt.hasMsg || !strings.Contains(msg, tt.mentions) {
			t.Errorf("gate(%v, %q) = %v, %q", tt.err, tt.env, fail, msg)
		}
	}
}
