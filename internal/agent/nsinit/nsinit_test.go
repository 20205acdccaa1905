package nsinit

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	good := func() Config {
		return Config{Lower: "../.templates/host-1", Upper: "upper", Work: "work", Rootfs: "rootfs",
			ReadOnly: []string{"/usr"}, Sealed: []string{"/.hutch"}, Hostname: "x", TmpBytes: 1 << 20}
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string // "" when valid
	}{
		{"good", func(*Config) {}, ""},
		{"lower beside", func(c *Config) { c.Lower = "lower" }, ""},
		{"lower two up", func(c *Config) { c.Lower = "../../layers/x" }, ""},
		{"lowers", func(c *Config) { c.Lower, c.Lowers = "", []string{"../.templates/image-1", "lower/1", "lower/0"} }, ""},
		{"lower and lowers", func(c *Config) { c.Lowers = []string{"lower/0"} }, "lower"},
		{"neither lower", func(c *Config) { c.Lower = "" }, "lower"},
		{"lowers up, down, up", func(c *Config) { c.Lower, c.Lowers = "", []string{"lower/0", "../x/../y"} }, "lower"},
		{"colon in lowers", func(c *Config) { c.Lower, c.Lowers = "", []string{"a:b"} }, "lower"},
		{"lower up, down, up", func(c *Config) { c.Lower = "../x/../../y" }, "lower"},
		{"absolute lower", func(c *Config) { c.Lower = "/x" }, "lower"},
		{"absolute upper", func(c *Config) { c.Upper = "/upper" }, "upper"},
		{"upper escapes", func(c *Config) { c.Upper = "../upper" }, "upper"},
		{"comma in lower", func(c *Config) { c.Lower = "a,upperdir=/x" }, "lower"},
		{"colon in lower", func(c *Config) { c.Lower = "a:b" }, "lower"},
		{"empty work", func(c *Config) { c.Work = "" }, "work"},
		{"bind of /", func(c *Config) { c.ReadOnly = []string{"/"} }, "read-only"},
		{"unclean bind", func(c *Config) { c.ReadOnly = []string{"/usr/../etc"} }, "read-only"},
		{"relative sealed", func(c *Config) { c.Sealed = []string{".hutch"} }, "sealed"},
		{"no hostname", func(c *Config) { c.Hostname = "" }, "hostname"},
		{"slash in hostname", func(c *Config) { c.Hostname = "a/b" }, "hostname"},
		{"long hostname", func(c *Config) { c.Hostname = strings.Repeat("h", 65) }, "hostname"},
		{"no tmp", func(c *Config) { c.TmpBytes = 0 }, "tmp_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.change(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate = %v, want an error about %s", err, tc.want)
			}
		})
	}
}
