package hostinfo

import (
	"strings"
	"testing"
)

func TestMeminfo(t *testing.T) {
	for _, tt := range []struct {
		in           string
		avail, total uint64
		wantErr      bool
	}{
		{"MemTotal:       24683656 kB\nMemFree:        22606360 kB\nMemAvailable:   23000000 kB\n", 23000000 << 10, 24683656 << 10, false},
		{"MemFree: 1 kB\nMemTotal: 1048576 kB\n", 0, 1 << 30, false},
		{"MemFree: 1 kB\n", 0, 0, true},
		{"MemTotal: lots kB\n", 0, 0, true},
		{"MemTotal: -5 kB\n", 0, 0, true},
		{"MemTotal: 1024 kB\nMemAvailable: x kB\n", 0, 0, true},
	} {
		avail, total, err := meminfo(strings.NewReader(tt.in))
		if avail != tt.avail || total != tt.total || (err != nil) != tt.wantErr {
			t.Errorf("meminfo(%q) = %d, %d, %v; want %d, %d, error %v", tt.in, avail, total, err, tt.avail, tt.total, tt.wantErr)
		}
	}
}

func TestBudget(t *testing.T) {
	for _, tt := range []struct{ total, reserve, want int }{
		{24105, 1024, 23081},
		{32768, 4096, 28672},
		{2048, 1024, 1024},
		{1000, 1024, 500}, // a reserve too large for the host leaves half
		{1000, -1, 1000},
		{1000, 0, 1000},
	} {
		if got := Budget(tt.total, tt.reserve); got != tt.want {
			t.Errorf("Budget(%d, %d) = %d, want %d", tt.total, tt.reserve, got, tt.want)
		}
	}
}

func TestRead(t *testing.T) {
	f, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if f.MemoryMB <= 0 || f.PidMax <= 0 || f.ThreadsMax <= 0 || f.CPUs <= 0 || f.Tasks() > f.PidMax {
		t.Errorf("Read() = %+v", f)
	}
}
