package manifest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/internal/agent/manifest"
)

func ptr(s string) *string { return &s }

// lines joins its arguments with newlines, so a case's line numbers can be
// read off its position in the list.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestParseValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *manifest.Manifest
	}{
		{
			name: "full",
			in: lines(
				"version: 1",
				"web:",
				"  command: npm run dev",
				"  port: 5173",
				"  health_path: /healthz",
				"  restart_after_task: true",
				"  websocket_path: /ws",
				"  websocket_protocol: vite-hmr",
				"build:",
				"  command: npm run build",
				"  timeout_seconds: 600",
				"workers:",
				"  - name: queue",
				"    command: node worker.js",
				"    restart_after_task: true",
				"  - name: Cron_2-b",
				"    command: |",
				"      node cron.js",
			),
			want: &manifest.Manifest{
				Version: 1,
				Web: &manifest.Web{
					Command:           "npm run dev",
					Port:              5173,
					HealthPath:        "/healthz",
					WebSocketPath:     "/ws",
					WebSocketProtocol: "vite-hmr",
					RestartAfterTask:  true,
				},
				Build: manifest.Build{Command: ptr("npm run build"), TimeoutSeconds: 600},
				Workers: []manifest.Worker{
					{Name: "queue", Command: "node worker.js", RestartAfterTask: true},
					{Name: "Cron_2-b", Command: "node cron.js\n"},
				},
			},
		},
		{
			name: "defaults",
			in:   lines("version: 1", "web:", "  command: npm run dev", "  port: 5173"),
			want: &manifest.Manifest{
				Version: 1,
				Web:     &manifest.Web{Command: "npm run dev", Port: 5173, HealthPath: "/"},
				Build:   manifest.Build{TimeoutSeconds: 300},
			},
		},
		{
			name: "nothing to run",
			in:   "version: 1\n",
			want: &manifest.Manifest{Version: 1, Build: manifest.Build{TimeoutSeconds: 300}},
		},
		{
			name: "build command absent",
			in:   lines("version: 1", "build:", "  timeout_seconds: 60"),
			want: &manifest.Manifest{Version: 1, Build: manifest.Build{TimeoutSeconds: 60}},
		},
		{
			name: "build command null is absent",
			in:   lines("version: 1", "build:", "  command: null"),
			want: &manifest.Manifest{Version: 1, Build: manifest.Build{TimeoutSeconds: 300}},
		},
		{
			name: "build command empty skips",
			in:   lines("version: 1", "build:", `  command: ""`),
			want: &manifest.Manifest{Version: 1, Build: manifest.Build{Command: ptr(""), TimeoutSeconds: 300}},
		},
		{
			name: "build command set",
			in:   lines("version: 1", "build:", "  command: make"),
			want: &manifest.Manifest{Version: 1, Build: manifest.Build{Command: ptr("make"), TimeoutSeconds: 300}},
		},
		{
			name: "empty build and workers",
			in:   lines("version: 1", "build:", "workers: []"),
			want: &manifest.Manifest{Version: 1, Build: manifest.Build{TimeoutSeconds: 300}},
		},
		{
			name: "aliases are followed",
			in: lines(
				"version: 1",
				"web:",
				"  command: &cmd node server.js",
				"  port: 8080",
				"workers:",
				"  - name: again",
				"    command: *cmd",
			),
			want: &manifest.Manifest{
				Version: 1,
				Web:     &manifest.Web{Command: "node server.js", Port: 8080, HealthPath: "/"},
				Build:   manifest.Build{TimeoutSeconds: 300},
				Workers: []manifest.Worker{{Name: "again", Command: "node server.js"}},
			},
		},
		{
			name: "json is yaml",
			in:   `{"version": 1, "web": {"command": "x", "port": 1}}`,
			want: &manifest.Manifest{
				Version: 1,
				Web:     &manifest.Web{Command: "x", Port: 1, HealthPath: "/"},
				Build:   manifest.Build{TimeoutSeconds: 300},
			},
		},
		{
			name: "trailing empty document",
			in:   lines("---", "version: 1", "---"),
			want: &manifest.Manifest{Version: 1, Build: manifest.Build{TimeoutSeconds: 300}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := manifest.Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseProblems(t *testing.T) {
	// web is a valid web section to build a case around.
	web := []string{"web:", "  command: npm run dev", "  port: 5173"}
	v1 := func(ls ...string) string { return lines(append([]string{"version: 1"}, ls...)...) }

	tests := []struct {
		name string
		in   string
		want []manifest.Problem
	}{
		{
			name: "unknown key at top",
			in:   v1(append(web, "envs: {}")...),
			want: []manifest.Problem{{Line: 5, Field: "envs",
				Message: `unknown key "envs"; the keys here are version, web, build, workers`}},
		},
		{
			name: "unknown key nested",
			in:   v1("web:", "  command: x", "  prot: 80", "  port: 80"),
			want: []manifest.Problem{{Line: 4, Field: "web.prot",
				Message: `unknown key "prot"; the keys here are command, port, health_path, websocket_path, websocket_protocol, restart_after_task`}},
		},
		{
			name: "unknown key in a worker",
			in:   v1("workers:", "  - name: a", "    command: x", "    env: {}"),
			want: []manifest.Problem{{Line: 5, Field: "workers[0].env",
				Message: `unknown key "env"; the keys here are name, command, restart_after_task`}},
		},
		{
			name: "long unknown key is clipped",
			in:   v1(strings.Repeat("é", 40) + ": 1"),
			want: []manifest.Problem{{Line: 2, Field: strings.Repeat("é", 32) + "…",
				Message: `unknown key "` + strings.Repeat("é", 32) + `…"; the keys here are version, web, build, workers`}},
		},
		{
			name: "repeated key",
			in:   v1("web:", "  command: x", "  port: 80", "  port: 81"),
			want: []manifest.Problem{{Line: 5, Field: "web.port", Message: "is given twice; first on line 4"}},
		},
		{
			name: "merge key",
			in:   v1("web:", "  <<: {command: x}", "  port: 80"),
			want: []manifest.Problem{
				{Line: 2, Field: "web.command", Message: "is required"},
				{Line: 3, Field: "web", Message: `has a merge key ("<<"), which is not supported; write the keys out`},
			},
		},
		{
			name: "port is a string",
			in:   v1("web:", "  command: x", `  port: "abc"`),
			want: []manifest.Problem{{Line: 4, Field: "web.port", Message: "must be an integer, not a string"}},
		},
		{
			name: "port is quoted digits",
			in:   v1("web:", "  command: x", `  port: "80"`),
			want: []manifest.Problem{{Line: 4, Field: "web.port", Message: "must be an integer, not a string"}},
		},
		{
			name: "port 0",
			in:   v1("web:", "  command: x", "  port: 0"),
			want: []manifest.Problem{{Line: 4, Field: "web.port", Message: "must be from 1 to 65535"}},
		},
		{
			name: "port 70000",
			in:   v1("web:", "  command: x", "  port: 70000"),
			want: []manifest.Problem{{Line: 4, Field: "web.port", Message: "must be from 1 to 65535"}},
		},
		{
			name: "port beyond int64",
			in:   v1("web:", "  command: x", "  port: 99999999999999999999999"),
			want: []manifest.Problem{{Line: 4, Field: "web.port", Message: "must be from 1 to 65535"}},
		},
		{
			name: "port is a float",
			in:   v1("web:", "  command: x", "  port: 80.5"),
			want: []manifest.Problem{{Line: 4, Field: "web.port", Message: "must be an integer, not a floating-point number"}},
		},
		{
			name: "command is a list",
			in:   v1("web:", "  command: [npm, start]", "  port: 80"),
			want: []manifest.Problem{{Line: 3, Field: "web.command", Message: "must be a string, not a list"}},
		},
		{
			name: "restart_after_task is yes",
			in:   v1(append(web, "  restart_after_task: yes")...),
			want: []manifest.Problem{{Line: 5, Field: "web.restart_after_task", Message: "must be true or false, not a string"}},
		},
		{
			name: "missing web.command",
			in:   v1("web:", "  port: 80"),
			want: []manifest.Problem{{Line: 2, Field: "web.command", Message: "is required"}},
		},
		{
			name: "null web.command",
			in:   v1("web:", "  command:", "  port: 80"),
			want: []manifest.Problem{{Line: 2, Field: "web.command", Message: "is required"}},
		},
		{
			name: "blank web.command",
			in:   v1("web:", `  command: "  "`, "  port: 80"),
			want: []manifest.Problem{{Line: 3, Field: "web.command", Message: "must not be empty"}},
		},
		{
			name: "NUL in a command",
			in:   v1("web:", `  command: "a\0b"`, "  port: 80"),
			want: []manifest.Problem{{Line: 3, Field: "web.command", Message: "must not contain a NUL byte"}},
		},
		{
			name: "command over 8 KiB",
			in:   v1("web:", "  command: "+strings.Repeat("x", 8<<10+1), "  port: 80"),
			want: []manifest.Problem{{Line: 3, Field: "web.command", Message: "is 8193 bytes; the limit is 8192 (8 KiB)"}},
		},
		{
			name: "empty web",
			in:   v1("web:"),
			want: []manifest.Problem{
				{Line: 2, Field: "web.command", Message: "is required"},
				{Line: 2, Field: "web.port", Message: "is required"},
			},
		},
		{
			name: "web is a string",
			in:   v1("web: npm start"),
			want: []manifest.Problem{{Line: 2, Field: "web", Message: "must be a mapping, not a string"}},
		},
		{
			name: "health_path without slash",
			in:   v1(append(web, "  health_path: healthz")...),
			want: []manifest.Problem{{Line: 5, Field: "web.health_path", Message: `must start with "/"`}},
		},
		{
			name: "websocket_protocol with a separator",
			in:   v1(append(web, `  websocket_protocol: "a b"`)...),
			want: []manifest.Problem{{Line: 5, Field: "web.websocket_protocol", Message: "must be a subprotocol name: 1-64 characters, no spaces or separators"}},
		},
		{
			name: "websocket_path without slash",
			in:   v1(append(web, `  websocket_path: ""`)...),
			want: []manifest.Problem{{Line: 5, Field: "web.websocket_path", Message: `must start with "/"`}},
		},
		{
			name: "health_path with a space",
			in:   v1(append(web, "  health_path: /a b")...),
			want: []manifest.Problem{{Line: 5, Field: "web.health_path", Message: "must not contain spaces or control characters"}},
		},
		{
			name: "build timeout out of range",
			in:   v1("build:", "  timeout_seconds: 3601"),
			want: []manifest.Problem{{Line: 3, Field: "build.timeout_seconds", Message: "must be from 1 to 3600"}},
		},
		{
			name: "build command is a number",
			in:   v1("build:", "  command: 1"),
			want: []manifest.Problem{{Line: 3, Field: "build.command", Message: "must be a string, not an integer"}},
		},
		{
			name: "worker name invalid",
			in:   v1("workers:", "  - name: a", "    command: x", "  - name: my worker", "    command: x"),
			want: []manifest.Problem{{Line: 5, Field: "workers[1].name",
				Message: `must be 1 to 64 letters, digits, "_" or "-"`}},
		},
		{
			name: "worker name too long",
			in:   v1("workers:", "  - name: "+strings.Repeat("a", 65), "    command: x"),
			want: []manifest.Problem{{Line: 3, Field: "workers[0].name",
				Message: `must be 1 to 64 letters, digits, "_" or "-"`}},
		},
		{
			name: "worker name duplicate",
			in:   v1("workers:", "  - name: q", "    command: x", "  - name: q", "    command: y"),
			want: []manifest.Problem{{Line: 5, Field: "workers[1].name", Message: `"q" is already the name of workers[0]`}},
		},
		{
			name: "worker named web",
			in:   v1("workers:", "  - name: web", "    command: x"),
			want: []manifest.Problem{{Line: 3, Field: "workers[0].name", Message: `must not be "web", the web server's name`}},
		},
		{
			name: "worker missing name and command",
			in:   v1("workers:", "  - restart_after_task: true"),
			want: []manifest.Problem{
				{Line: 3, Field: "workers[0].name", Message: "is required"},
				{Line: 3, Field: "workers[0].command", Message: "is required"},
			},
		},
		{
			name: "worker is a string",
			in:   v1("workers:", "  - node worker.js"),
			want: []manifest.Problem{{Line: 3, Field: "workers[0]", Message: "must be a mapping, not a string"}},
		},
		{
			name: "workers is a mapping",
			in:   v1("workers:", "  queue: node worker.js"),
			want: []manifest.Problem{{Line: 3, Field: "workers", Message: "must be a list, not a mapping"}},
		},
		{
			name: "more than 32 workers",
			in:   v1(append([]string{"workers:"}, workerLines(33)...)...),
			want: []manifest.Problem{{Line: 2, Field: "workers", Message: "has 33 workers; the limit is 32"}},
		},
		{
			name: "bad version",
			// Only the version is reported: another version's keys are not this one's.
			in:   lines("version: 2", "web: {}", "extra: 1"),
			want: []manifest.Problem{{Line: 1, Field: "version", Message: "version 2 is not supported; the supported version is 1"}},
		},
		{
			name: "version is a string",
			in:   lines(`version: "1"`, "extra: 1"),
			want: []manifest.Problem{
				{Line: 1, Field: "version", Message: "must be the integer 1, not a string"},
				{Line: 2, Field: "extra", Message: `unknown key "extra"; the keys here are version, web, build, workers`},
			},
		},
		{
			name: "version missing",
			in:   lines("# my app", "web:", "  command: x", "  port: 80"),
			want: []manifest.Problem{{Line: 2, Field: "version", Message: "is required; the supported version is 1"}},
		},
		{
			name: "empty file",
			in:   "",
			want: []manifest.Problem{{Field: "version", Message: "is required; the supported version is 1"}},
		},
		{
			name: "file is a list",
			in:   lines("- version: 1"),
			want: []manifest.Problem{{Line: 1, Message: "must be a mapping with keys such as version and web, not a list"}},
		},
		{
			name: "oversize file",
			in:   "version: 1\n#" + strings.Repeat("x", manifest.MaxBytes),
			want: []manifest.Problem{{Message: "is 65548 bytes; the limit is 65536 (64 KiB)"}},
		},
		{
			name: "syntax error",
			in:   v1("web:", "  command: x", "  port: [80"),
			want: []manifest.Problem{{Line: 4, Message: "is not valid YAML: did not find expected ',' or ']'"}},
		},
		{
			name: "tab indentation",
			in:   v1("web:", "\tcommand: x"),
			want: []manifest.Problem{{Line: 3, Message: "is not valid YAML: found character that cannot start any token"}},
		},
		{
			name: "tab indentation at the top",
			in:   lines("version: 1", "\tweb: {}"),
			want: []manifest.Problem{{Line: 2, Message: "is not valid YAML: found a tab character that violates indentation"}},
		},
		{
			name: "syntax error at the end of the file",
			in:   "version: 1\nweb: [a,",
			want: []manifest.Problem{{Line: 2, Message: "is not valid YAML: did not find expected node content"}},
		},
		{
			name: "syntax error in a block mapping",
			in:   lines("version: 1", "web:", "  command: x", " port: 80"),
			want: []manifest.Problem{{Line: 4, Message: "is not valid YAML: did not find expected key"}},
		},
		{
			name: "unknown anchor",
			in:   v1("web: *nope"),
			want: []manifest.Problem{{Message: "is not valid YAML: unknown anchor 'nope' referenced"}},
		},
		{
			name: "two documents",
			in:   lines("version: 1", "---", "version: 1"),
			want: []manifest.Problem{{Line: 2, Message: "holds a second YAML document; it must hold one"}},
		},
		{
			name: "alias cycle",
			in:   v1("workers: &w [*w]"),
			want: []manifest.Problem{{Line: 2, Field: "workers[0]", Message: "must be a mapping, not a list"}},
		},
		{
			name: "many problems at once, in line order",
			in: lines(
				"version: 1",
				"workers:",
				"  - name: web",
				"    command: x",
				"web:",
				"  port: 0",
				"  health_path: x",
				"build:",
				"  timeout_seconds: abc",
			),
			want: []manifest.Problem{
				{Line: 3, Field: "workers[0].name", Message: `must not be "web", the web server's name`},
				{Line: 5, Field: "web.command", Message: "is required"},
				{Line: 6, Field: "web.port", Message: "must be from 1 to 65535"},
				{Line: 7, Field: "web.health_path", Message: `must start with "/"`},
				{Line: 9, Field: "build.timeout_seconds", Message: "must be an integer, not a string"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := manifest.Parse([]byte(tt.in))
			if got != nil {
				t.Errorf("Parse returned a manifest with its error: %+v", got)
			}
			var merr *manifest.Error
			if !errors.As(err, &merr) {
				t.Fatalf("Parse error = %v, want a *manifest.Error", err)
			}
			if diff := cmp.Diff(tt.want, merr.Problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func workerLines(n int) []string {
	var ls []string
	for i := range n {
		ls = append(ls, fmt.Sprintf("  - name: w%d", i), "    command: x")
	}
	return ls
}

func TestParseStopsAfterTwenty(t *testing.T) {
	var ls []string
	for i := range 30 {
		ls = append(ls, fmt.Sprintf("k%d: 1", i))
	}
	_, err := manifest.Parse([]byte(lines(append([]string{"version: 1"}, ls...)...)))
	var merr *manifest.Error
	if !errors.As(err, &merr) {
		t.Fatalf("Parse error = %v, want a *manifest.Error", err)
	}
	if got, want := len(merr.Problems), 21; got != want {
		t.Fatalf("got %d problems, want %d: %v", got, want, merr.Problems)
	}
	want := manifest.Problem{Message: "has more problems; these are the first 20"}
	if diff := cmp.Diff(want, merr.Problems[20]); diff != "" {
		t.Errorf("last problem (-want +got):\n%s", diff)
	}
	if got := merr.Problems[19].Field; got != "k19" {
		t.Errorf("20th problem is about %q, want k19", got)
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		problems []manifest.Problem
		want     string
	}{
		{nil, "sandbox.yaml: invalid manifest"},
		{
			[]manifest.Problem{{Line: 3, Field: "web.port", Message: "must be from 1 to 65535"}},
			"sandbox.yaml:3: web.port: must be from 1 to 65535",
		},
		{
			[]manifest.Problem{{Message: "is 70000 bytes"}, {Line: 1}},
			"sandbox.yaml: is 70000 bytes (and 1 more problem)",
		},
		{
			[]manifest.Problem{{Line: 3, Field: "web.port", Message: "must be from 1 to 65535"}, {}, {}},
			"sandbox.yaml:3: web.port: must be from 1 to 65535 (and 2 more problems)",
		},
		{
			[]manifest.Problem{{Line: 2, Message: "is not valid YAML: x"}},
			"sandbox.yaml:2: is not valid YAML: x",
		},
	}
	for _, tt := range tests {
		if got := (&manifest.Error{Problems: tt.problems}).Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestProcesses(t *testing.T) {
	m, err := manifest.Parse([]byte(lines(
		"version: 1",
		"workers:",
		"  - name: b",
		"    command: run b",
		"    restart_after_task: true",
		"  - name: a",
		"    command: run a",
		"web:",
		"  command: serve",
		"  port: 80",
		"  restart_after_task: true",
	)))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []manifest.Process{
		{Name: "web", Command: "serve", Web: true, RestartAfterTask: true},
		{Name: "b", Command: "run b", RestartAfterTask: true},
		{Name: "a", Command: "run a"},
	}
	if diff := cmp.Diff(want, m.Processes()); diff != "" {
		t.Errorf("Processes (-want +got):\n%s", diff)
	}
	if got := (&manifest.Manifest{Version: 1}).Processes(); got != nil {
		t.Errorf("Processes of an empty manifest = %v, want nil", got)
	}
}

// FuzzParse checks that Parse never panics, that it returns exactly one of
// a manifest and a *Error, and that a manifest it accepts survives a trip
// through JSON (which is YAML) and back unchanged.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"version: 1\n",
		lines("version: 1", "web:", "  command: npm run dev", "  port: 5173", "  websocket_path: /ws",
			"build:", `  command: ""`, "workers:", "  - name: q", "    command: node w.js", "    restart_after_task: true"),
		lines("version: 1", "web: &a", "  command: *a"),
		lines("version: 1", "workers: &w [*w, *w]"),
		lines("version: 1", "build: {command: null, timeout_seconds: 0x10}"),
		"version: 2\n",
		"{\"version\": 1, \"web\": {\"command\": \"\\u0001\", \"port\": 1}}",
		"version: 1\n---\n",
		"web:\n\tport: 1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := manifest.Parse(b)
		if err != nil {
			var merr *manifest.Error
			if !errors.As(err, &merr) || len(merr.Problems) == 0 {
				t.Fatalf("Parse error %v is not a *Error with problems", err)
			}
			if m != nil {
				t.Fatalf("Parse returned a manifest with its error")
			}
			return
		}
		if m == nil {
			t.Fatal("Parse returned neither a manifest nor an error")
		}
		j, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		again, err := manifest.Parse(j)
		if err != nil {
			t.Fatalf("Parse of its own JSON %s: %v", j, err)
		}
		if diff := cmp.Diff(m, again); diff != "" {
			t.Fatalf("JSON round trip (-first +again):\n%s", diff)
		}
		if diff := cmp.Diff(m.Processes(), again.Processes()); diff != "" {
			t.Fatalf("Processes after a JSON round trip (-first +again):\n%s", diff)
		}
	})
}
