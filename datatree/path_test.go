package datatree

import (
	"fmt"
	"math"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func TestValidatePath(t *testing.T) {
	tests := []struct {
		path string
		want jute.Code
	}{
		{"/", jute.OK},
		{"/a", jute.OK},
		{"/a/b/c", jute.OK},
		{"/a..", jute.OK},
		{"/.x", jute.OK},
		{"/...", jute.OK},
		{"/a/.b/..c", jute.OK},
		{"/é", jute.OK},
		{"/\u00a0", jute.OK},
		{"/\ud7ff", jute.OK},
		{"/\uf900", jute.OK},
		{"/\uffef", jute.OK},
		{"/zookeeper/quota", jute.OK},
		{"", jute.BadArguments},
		{"a", jute.BadArguments},
		{"a/b", jute.BadArguments},
		{"/a/", jute.BadArguments},
		{"//", jute.BadArguments},
		{"/a//b", jute.BadArguments},
		{"/.", jute.BadArguments},
		{"/..", jute.BadArguments},
		{"/a/.", jute.BadArguments},
		{"/a/..", jute.BadArguments},
		{"/a/../b", jute.BadArguments},
		{"/a/./b", jute.BadArguments},
		{"/a\x00b", jute.BadArguments},
		{"/\x01", jute.BadArguments},
		{"/a\tb", jute.BadArguments},
		{"/\x1f", jute.BadArguments},
		{"/\x7f", jute.BadArguments},
		{"/\u0080", jute.BadArguments},
		{"/\u009f", jute.BadArguments},
		{"/\ue000", jute.BadArguments},
		{"/\uf8ff", jute.BadArguments},
		{"/\ufff0", jute.BadArguments},
		{"/\ufffd", jute.BadArguments},
		{"/\uffff", jute.BadArguments},
		{"/😀", jute.BadArguments},
		{"/\xff", jute.BadArguments},
		{"/a\xc3", jute.BadArguments},
		{"/\xed\xa0\x80", jute.BadArguments}, // an encoded surrogate is invalid UTF-8
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.path), func(t *testing.T) {
			if got := ValidatePath(tt.path); got != tt.want {
				t.Errorf("ValidatePath(%q) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}

func TestAppendSequence(t *testing.T) {
	tests := []struct {
		v    int32
		want string
	}{
		{0, "0000000000"},
		{5, "0000000005"},
		{1234567890, "1234567890"},
		{math.MaxInt32, "2147483647"},
		{-5, "-000000005"},
		{-123456789, "-123456789"},
		{-1234567890, "-1234567890"},
		{math.MinInt32, "-2147483648"},
	}
	for _, tt := range tests {
		if got := string(appendSequence(nil, tt.v)); got != tt.want {
			t.Errorf("appendSequence(%d) = %q, want %q", tt.v, got, tt.want)
		}
		if got := fmt.Sprintf("%010d", tt.v); got != tt.want {
			t.Errorf("test table disagrees with %%010d for %d: %q", tt.v, got)
		}
	}
}

func TestJavaLen(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{{"", 0}, {"/abc", 4}, {"/é", 2}, {"/\u4e2d", 2}, {"/😀", 3}}
	for _, tt := range tests {
		if got := javaLen(tt.s); got != tt.want {
			t.Errorf("javaLen(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

func TestSplitParent(t *testing.T) {
	tests := []struct {
		path, parent, name string
		ok                 bool
	}{
		{"/a", "", "a", true},
		{"/a/b", "/a", "b", true},
		{"/x/", "/x", "", true},
		{"/", "", "", true},
		{"m/bad", "m", "bad", true},
		{"noslash", "", "", false},
	}
	for _, tt := range tests {
		p, n, ok := splitParent(tt.path)
		if p != tt.parent || n != tt.name || ok != tt.ok {
			t.Errorf("splitParent(%q) = %q, %q, %v", tt.path, p, n, ok)
		}
	}
}
