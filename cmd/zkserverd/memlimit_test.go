package main

import (
	"testing"
	"testing/fstest"

	"github.com/zkserverd/zkserverd/conf"
)

func TestCgroupMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name     string
		files    fstest.MapFS
		want     int64
		wantFile string
		wantErr  bool
	}{
		{name: "no cgroup file system", files: fstest.MapFS{}},
		{name: "v2 container root", files: fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("536870912\n"),
		}, want: 512 << 20, wantFile: "/sys/fs/cgroup/memory.max"},
		{name: "v2 unlimited", files: fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}},
		{name: "v2 nested: the smallest along the ancestors", files: fstest.MapFS{
			"proc/self/cgroup": file("0::/system.slice/zk.service\n"),
			"sys/fs/cgroup/system.slice/zk.service/memory.max": file("max\n"),
			"sys/fs/cgroup/system.slice/memory.max":            file("1073741824\n"),
			"sys/fs/cgroup/memory.max":                         file("2147483648\n"),
		}, want: 1 << 30, wantFile: "/sys/fs/cgroup/system.slice/memory.max"},
		{name: "v2 nested: the cgroup's own", files: fstest.MapFS{
			"proc/self/cgroup":             file("0::/a/b\n"),
			"sys/fs/cgroup/a/b/memory.max": file("100000000\n"),
			"sys/fs/cgroup/a/memory.max":   file("200000000\n"),
		}, want: 100000000, wantFile: "/sys/fs/cgroup/a/b/memory.max"},
		{name: "v1", files: fstest.MapFS{
			"proc/self/cgroup": file("12:cpu,cpuacct:/\n7:memory:/docker/abc\n"),
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": file("268435456\n"),
		}, want: 256 << 20, wantFile: "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"},
		{name: "v1 unlimited", files: fstest.MapFS{
			"proc/self/cgroup":                           file("7:memory:/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
		}},
		{name: "garbage", files: fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("lots\n"),
		}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotFile, err := cgroupMemoryLimit(tt.files)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want || gotFile != tt.wantFile {
				t.Errorf("limit = %d from %q, want %d from %q", got, gotFile, tt.want, tt.wantFile)
			}
		})
	}
}

func TestChooseMemoryLimit(t *testing.T) {
	cgroup := fstest.MapFS{
		"proc/self/cgroup":         &fstest.MapFile{Data: []byte("0::/\n")},
		"sys/fs/cgroup/memory.max": &fstest.MapFile{Data: []byte("1000000000\n")},
	}
	withKey := conf.Default()
	withKey.MemoryLimitBytes = 64 << 20
	tests := []struct {
		name       string
		cfg        conf.Config
		env        map[string]string
		root       fstest.MapFS
		wantBytes  int64
		wantSoft   int64
		wantSource string
	}{
		{name: "nothing", cfg: conf.Default(), root: fstest.MapFS{}, wantSource: "none"},
		{name: "cgroup", cfg: conf.Default(), root: cgroup, wantBytes: 850000000, wantSoft: 850000000,
			wantSource: "cgroup /sys/fs/cgroup/memory.max (1000000000 bytes) x 0.85"},
		{name: "the key before the cgroup", cfg: withKey, root: cgroup, wantBytes: 64 << 20, wantSoft: 64 << 20, wantSource: "memory.limitBytes"},
		{name: "GOMEMLIMIT=off is no limit of its own", cfg: withKey, env: map[string]string{"GOMEMLIMIT": "off"}, root: cgroup,
			wantBytes: 64 << 20, wantSoft: 64 << 20, wantSource: "memory.limitBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := chooseMemoryLimit(tt.cfg, func(k string) string { return tt.env[k] }, tt.root)
			if err != nil {
				t.Fatal(err)
			}
			if m.bytes != tt.wantBytes || m.soft != tt.wantSoft || m.source != tt.wantSource {
				t.Errorf("got %+v, want bytes %d soft %d source %q", m, tt.wantBytes, tt.wantSoft, tt.wantSource)
			}
		})
	}
}
