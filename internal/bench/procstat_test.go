package bench

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadProc(t *testing.T) {
	tests := []struct {
		name    string
		pid     int
		want    ProcSample
		wantErr error
	}{
		{"java server", 4242, ProcSample{CPU: 18010 * time.Millisecond, RSS: 66572 << 10, HWM: 123456 << 10}, nil},
		{"command name with spaces and parentheses, no VmHWM", 77, ProcSample{CPU: 80 * time.Millisecond, RSS: 1 << 10}, nil},
		{"truncated stat", 99, ProcSample{}, ErrProcFormat},
		{"missing process", 12345, ProcSample{}, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadProc(filepath.Join("testdata", "proc"), tt.pid)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("sample = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadProcsSums(t *testing.T) {
	got, err := ReadProcs(filepath.Join("testdata", "proc"), []int{4242, 77})
	if err != nil {
		t.Fatal(err)
	}
	want := ProcSample{CPU: 18090 * time.Millisecond, RSS: (66572 + 1) << 10, HWM: 123456 << 10}
	if got != want {
		t.Fatalf("sum = %+v, want %+v", got, want)
	}
	if _, err := ReadProcs(filepath.Join("testdata", "proc"), []int{4242, 99}); !errors.Is(err, ErrProcFormat) {
		t.Fatalf("a bad member should fail the sum, got %v", err)
	}
}

func TestParseStatCPURejects(t *testing.T) {
	for _, in := range []string{
		"",
		"12 no-parens S 1 2 3",
		"12 (x) S 1 2 3 4 5 6 7 8 9 10 abc 11",
		"12 (x) S 1 2 3 4 5 6 7 8 9 10 -1 11",
	} {
		if _, err := ParseStatCPU([]byte(in)); !errors.Is(err, ErrProcFormat) {
			t.Errorf("ParseStatCPU(%q) error = %v, want ErrProcFormat", in, err)
		}
	}
}

func TestParseStatusMemoryRejects(t *testing.T) {
	for _, in := range []string{
		"Name:\tx\n",
		"VmRSS:\t12 MB\n",
		"VmRSS:\tlots kB\n",
		"VmRSS:\t12 kB\nVmHWM:\t-3 kB\n",
	} {
		if _, _, err := ParseStatusMemory([]byte(in)); !errors.Is(err, ErrProcFormat) {
			t.Errorf("ParseStatusMemory(%q) error = %v, want ErrProcFormat", in, err)
		}
	}
}

func TestReadProcSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	s, err := ReadProc("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS <= 0 || s.HWM < s.RSS {
		t.Fatalf("implausible sample of this process: %+v", s)
	}
}
