package confine

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want []string // substrings of the error; none means valid
	}{
		{"empty", Config{}, nil},
		{"everything", Config{
			NoNewPrivs: true, Seccomp: true, RestrictSockets: true,
			Landlock: &Landlock{ReadOnly: []string{"/usr"}, ReadWrite: []string{"/tmp"}, DenyTCP: true, ConnectPorts: []uint16{443}, Scope: true},
			Rlimits:  []Rlimit{{Resource: "nofile", Cur: 10, Max: 20}, {Resource: "core"}},
		}, nil},
		{"every rlimit name", Config{Rlimits: []Rlimit{
			{Resource: "nproc"}, {Resource: "as"}, {Resource: "nofile"}, {Resource: "fsize"},
			{Resource: "core"}, {Resource: "cpu"}, {Resource: "stack"}, {Resource: "memlock"},
		}}, nil},
		{"unknown rlimit", Config{Rlimits: []Rlimit{{Resource: "rss"}}}, []string{`unknown rlimit "rss"`}},
		{"rlimit twice", Config{Rlimits: []Rlimit{{Resource: "cpu"}, {Resource: "cpu"}}}, []string{`"cpu" given twice`}},
		{"cur above max", Config{Rlimits: []Rlimit{{Resource: "cpu", Cur: 2, Max: 1}}}, []string{"cur 2 above max 1"}},
		{"sockets without seccomp", Config{RestrictSockets: true}, []string{"restrict_sockets needs seccomp"}},
		{"relative path", Config{Landlock: &Landlock{ReadWrite: []string{"tmp"}}}, []string{`"tmp" is not absolute`}},
		{"ports without deny", Config{Landlock: &Landlock{ConnectPorts: []uint16{80}}}, []string{"connect_ports needs deny_tcp"}},
		{"port zero", Config{Landlock: &Landlock{DenyTCP: true, ConnectPorts: []uint16{0}}}, []string{"port 0"}},
		{"all errors at once", Config{
			RestrictSockets: true,
			Rlimits:         []Rlimit{{Resource: "bogus"}},
			Landlock:        &Landlock{ReadOnly: []string{"rel"}},
		}, []string{"bogus", "restrict_sockets", `"rel"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestApplyNilConfig(t *testing.T) {
	// Safe in process: Apply refuses before touching anything.
	if _, err := Apply(nil); err == nil {
		t.Fatal("Apply(nil) succeeded")
	}
}
