package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hutchdev/hutch/api"
)

// runHutch runs hutch args with no server and returns stdout, stderr and
// the exit status.
func runHutch(args ...string) (string, string, int) {
	e, errb := testEnv(map[string]string{"HUTCH_API_KEY": "k", "HUTCH_URL": "http://127.0.0.1:1"})
	code := run(context.Background(), e, args)
	return e.stdout.(*bytes.Buffer).String(), errb.String(), code
}

// TestHelpEverywhere: -h and --help work on every command and group,
// print to stdout and exit 0 (serve's come from its own flag set).
func TestHelpEverywhere(t *testing.T) {
	e, _ := testEnv(nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		if c.Name() != "serve" {
			for _, h := range []string{"-h", "--help"} {
				out, errOut, code := runHutch(append(path, h)...)
				if code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
					t.Errorf("hutch %s %s: exit %d, stdout %.40q, stderr %q", strings.Join(path, " "), h, code, out, errOut)
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(e))
	// After the sandbox id of a command that runs one, -h is still hutch's.
	if out, _, code := runHutch("exec", sbRunning, "--cwd", "/w", "-h"); code != 0 || !strings.Contains(out, "Usage:") {
		t.Errorf("hutch exec ID --cwd /w -h: exit %d, stdout %.40q", code, out)
	}
}

func TestVersion(t *testing.T) {
	flag, _, code1 := runHutch("--version")
	cmd, _, code2 := runHutch("version")
	if code1 != 0 || code2 != 0 || flag != cmd || !strings.HasPrefix(flag, "hutch ") {
		t.Errorf("--version %q (%d), version %q (%d); want the same line", flag, code1, cmd, code2)
	}
	out, _, _ := runHutch("version", "--json")
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Version == "" || v.Platform == "" {
		t.Errorf("version --json = %q (%v)", out, err)
	}
}

// TestDidYouMean: an unknown command is a usage error naming the nearest.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sandbx"}, "did you mean sandbox?"},
		{[]string{"sandbox", "lss"}, "did you mean ls?"},
		{[]string{"snapshot", "craete"}, "did you mean create?"},
	} {
		_, errOut, code := runHutch(tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("hutch %q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestErrorsOnce: an error is one line with one "hutch: " prefix; under
// --json it is the API's error envelope on stderr, stdout empty.
func TestErrorsOnce(t *testing.T) {
	s := newFakeServer(t)
	for _, tc := range []struct {
		args []string
		code int
		json string // the error code under --json
	}{
		{[]string{"sandbox", "get", sbDestroyed}, 1, "sandbox_not_found"},
		{[]string{"sandbox", "get"}, 2, codeUsage},
		{[]string{"exec", sbRunning}, 2, codeUsage},
		{[]string{"ls", "--nope"}, 2, codeUsage},
		{[]string{"cp", "./no/such/file", sbRunning + ":x"}, 1, codeLocal},
	} {
		_, errOut, code, _ := s.run("", tc.args...)
		first, _, _ := strings.Cut(errOut, "\n")
		if code != tc.code || !strings.HasPrefix(first, "hutch: ") || strings.Count(errOut, "hutch: ") != 1 {
			t.Errorf("hutch %q: exit %d, stderr %q; want %d and one hutch: line", tc.args, code, errOut, tc.code)
		}
		out, errOut, code, _ := s.run("", append([]string{"--json"}, tc.args...)...)
		var env api.Error
		if err := json.Unmarshal([]byte(errOut), &env); err != nil || env.Error.Code != tc.json || env.Error.Message == "" || out != "" || code != tc.code {
			t.Errorf("hutch --json %q: exit %d, stdout %q, stderr %q (%v); want code %s", tc.args, code, out, errOut, err, tc.json)
		}
	}
}

// TestFlagsAnywhere: flags go before or after the arguments.
func TestFlagsAnywhere(t *testing.T) {
	s := newFakeServer(t)
	for _, args := range [][]string{
		{"--json", "sandbox", "get", sbRunning},
		{"sandbox", "--json", "get", sbRunning},
		{"sandbox", "get", sbRunning, "--json"},
	} {
		out, errOut, code, _ := s.run("", args...)
		var sb api.Sandbox
		if err := json.Unmarshal([]byte(out), &sb); err != nil || sb.ID != sbRunning || code != 0 {
			t.Errorf("hutch %q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]string{"90s": "1m30s", "1h": "1h0m0s", "60": "1m0s", "0": "0s", "1h30m": "1h30m0s"} {
		if d, err := parseDuration(in); err != nil || d.String() != want {
			t.Errorf("parseDuration(%q) = %s, %v; want %s", in, d, err, want)
		}
	}
	for _, bad := range []string{"-1", "-5s", "soon", "1.5"} {
		if _, err := parseDuration(bad); err == nil {
			t.Errorf("parseDuration(%q) succeeded", bad)
		}
	}
}
