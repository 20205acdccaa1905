package proc_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/agent/proc"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/testutil/agenttest"
)

func TestExec(t *testing.T) {
	f := agenttest.New(t, nil)
	if err := os.Mkdir(filepath.Join(f.Work, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	agenttest.WriteHost(t, filepath.Join(f.Work, "sub", "noexec.sh"), "#!/bin/sh\necho no\n")
	agenttest.WriteHost(t, filepath.Join(f.Work, "sub", "hello.sh"), "#!/bin/sh\necho hello from script\n")
	if err := os.Chmod(filepath.Join(f.Work, "sub", "hello.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	realWork, err := filepath.EvalSymlinks(f.Work)
	if err != nil {
		t.Fatal(err)
	}
	ignore := cmpopts.IgnoreFields(api.ExecResult{}, "DurationMS", "Error")
	tests := []struct {
		name           string
		req            api.ExecRequest
		stdout, stderr string
		res            api.ExecResult
		errHas         string
	}{
		{
			name:   "stdout stderr exit code",
			req:    api.ExecRequest{Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}},
			stdout: "out\n", stderr: "err\n", res: api.ExecResult{ExitCode: 3},
		},
		{
			name:   "stdin",
			req:    api.ExecRequest{Cmd: []string{"cat"}, Stdin: "hello\nworld"},
			stdout: "hello\nworld",
		},
		{
			name:   "no stdin reads EOF",
			req:    api.ExecRequest{Cmd: []string{"wc", "-c"}},
			stdout: "0\n",
		},
		{
			name: "env: request wins over envelope, PATH default",
			req: api.ExecRequest{
				Cmd: []string{"sh", "-c", `echo "$FROM_ENVELOPE $SHARED $MINE $PATH"`},
				Env: map[string]string{"SHARED": "request", "MINE": "x y"},
			},
			stdout: "envelope request x y " + proc.DefaultPath + "\n",
		},
		{
			name: "program found with the command's own PATH",
			req: api.ExecRequest{
				Cmd: []string{"hello.sh"},
				Env: map[string]string{"PATH": "/nonexistent:" + filepath.Join(f.Work, "sub")},
			},
			stdout: "hello from script\n",
		},
		{
			name:   "default cwd is the workdir",
			req:    api.ExecRequest{Cmd: []string{"pwd"}},
			stdout: realWork + "\n",
		},
		{
			name:   "relative cwd",
			req:    api.ExecRequest{Cmd: []string{"pwd"}, Cwd: "sub"},
			stdout: filepath.Join(realWork, "sub") + "\n",
		},
		{
			name:   "absolute cwd inside root, relative program path",
			req:    api.ExecRequest{Cmd: []string{"./hello.sh"}, Cwd: filepath.Join(f.Work, "sub")},
			stdout: "hello from script\n",
		},
		{
			name:   "missing program",
			req:    api.ExecRequest{Cmd: []string{"hutch-no-such-program"}},
			res:    api.ExecResult{ExitCode: 127},
			errHas: "command not found",
		},
		{
			name:   "missing program by path",
			req:    api.ExecRequest{Cmd: []string{"./nope"}},
			res:    api.ExecResult{ExitCode: 127},
			errHas: "no such file",
		},
		{
			name:   "not executable",
			req:    api.ExecRequest{Cmd: []string{"./noexec.sh"}, Cwd: "sub"},
			res:    api.ExecResult{ExitCode: 126},
			errHas: "permission denied",
		},
		{
			name:   "a directory is not executable",
			req:    api.ExecRequest{Cmd: []string{"./sub"}},
			res:    api.ExecResult{ExitCode: 126},
			errHas: "directory",
		},
		{
			name: "killed by a signal",
			req:  api.ExecRequest{Cmd: []string{"sh", "-c", "kill -TERM $$"}},
			res:  api.ExecResult{ExitCode: 128 + 15, Signal: "SIGTERM"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, res := f.Run(t, tt.req)
			if stdout != tt.stdout || stderr != tt.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", stdout, stderr, tt.stdout, tt.stderr)
			}
			if d := cmp.Diff(tt.res, res, ignore); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
			if !strings.Contains(res.Error, tt.errHas) || (tt.errHas == "") != (res.Error == "") {
				t.Errorf("error %q, want one containing %q", res.Error, tt.errHas)
			}
			if res.DurationMS < 0 {
				t.Errorf("duration %v is negative", res.DurationMS)
			}
		})
	}
}

func TestExecRefused(t *testing.T) {
	f := agenttest.New(t, nil)
	tests := []struct {
		name  string
		req   api.ExecRequest
		class error
		code  string
	}{
		{"empty cmd", api.ExecRequest{}, errdefs.ErrInvalid, "invalid_cmd"},
		{"empty program", api.ExecRequest{Cmd: []string{""}}, errdefs.ErrInvalid, "invalid_cmd"},
		{"NUL in cmd", api.ExecRequest{Cmd: []string{"echo", "a\x00b"}}, errdefs.ErrInvalid, "invalid_cmd"},
		{"NUL in env value", api.ExecRequest{Cmd: []string{"true"}, Env: map[string]string{"A": "x\x00"}}, errdefs.ErrInvalid, "invalid_env"},
		{"= in env name", api.ExecRequest{Cmd: []string{"true"}, Env: map[string]string{"A=B": "x"}}, errdefs.ErrInvalid, "invalid_env"},
		{"negative timeout", api.ExecRequest{Cmd: []string{"true"}, TimeoutMS: -1}, errdefs.ErrInvalid, "invalid_timeout"},
		{"cwd outside root", api.ExecRequest{Cmd: []string{"true"}, Cwd: "/etc"}, errdefs.ErrInvalid, "path_outside_sandbox"},
		{"cwd with ..", api.ExecRequest{Cmd: []string{"true"}, Cwd: "../.."}, errdefs.ErrInvalid, "invalid_path"},
		{"missing cwd", api.ExecRequest{Cmd: []string{"true"}, Cwd: "nope"}, errdefs.ErrNotFound, "file_not_found"},
	}
	for _, tt := range tests {
		_, err := f.Client.Exec(context.Background(), tt.req)
		agenttest.WantErr(t, tt.name, err, tt.class, tt.code)
	}
}

func TestExecTimeout(t *testing.T) {
	f := agenttest.New(t, nil)
	_, _, res := f.Run(t, api.ExecRequest{Cmd: []string{"sleep", "1000"}, TimeoutMS: 100})
	want := api.ExecResult{ExitCode: 128 + 9, Signal: "SIGKILL", TimedOut: true}
	if d := cmp.Diff(want, res, cmpopts.IgnoreFields(api.ExecResult{}, "DurationMS")); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
}

// TestExecCancelKillsGroup cancels the request while a command and its
// background child run: both, in the command's process group, die.
func TestExecCancelKillsGroup(t *testing.T) {
	f := agenttest.New(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := f.Client.Exec(ctx, api.ExecRequest{Cmd: []string{"sh", "-c", "sleep 1000 & echo $$ $!; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var line string
	for !strings.HasSuffix(line, "\n") {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("before any output: %v", err)
		}
		line += string(ev.Data)
	}
	var pids []int
	for _, w := range strings.Fields(line) {
		pid, err := strconv.Atoi(w)
		if err != nil {
			t.Fatalf("bad pid line %q", line)
		}
		pids = append(pids, pid)
	}
	for _, pid := range pids {
		if agenttest.Dead(pid) {
			t.Fatalf("pid %d is not running before the cancel", pid)
		}
	}
	cancel()
	if _, err := s.Next(); err == nil {
		t.Error("stream went on after the cancel")
	}
	for _, pid := range pids {
		agenttest.WaitFor(t, "pid "+strconv.Itoa(pid)+" killed", func() bool { return agenttest.Dead(pid) })
	}
}

// TestExecStreams proves output arrives while the command still runs: the
// command waits for a file the test creates only after it saw "first".
func TestExecStreams(t *testing.T) {
	f := agenttest.New(t, nil)
	s, err := f.Client.Exec(context.Background(), api.ExecRequest{
		Cmd: []string{"sh", "-c", "echo first; while [ ! -e go-on ]; do sleep 0.01; done; echo second"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev, err := s.Next()
	if err != nil || ev.Type != api.ExecStdout || string(ev.Data) != "first\n" {
		t.Fatalf("first event %+v, %v; want stdout \"first\\n\"", ev, err)
	}
	agenttest.WriteHost(t, filepath.Join(f.Work, "go-on"), "")
	stdout, _, res := agenttest.Collect(t, s)
	if string(stdout) != "second\n" || res.ExitCode != 0 {
		t.Errorf("rest %q exit %d, want \"second\\n\" 0", stdout, res.ExitCode)
	}
}

func TestExecBinaryOutput(t *testing.T) {
	f := agenttest.New(t, nil)
	stdout, _, res := f.Run(t, api.ExecRequest{Cmd: []string{"printf", `\377\376\000\200abc\n`}})
	if want := "\xff\xfe\x00\x80abc\n"; stdout != want || res.ExitCode != 0 {
		t.Errorf("stdout %q exit %d, want %q 0", stdout, res.ExitCode, want)
	}
}

func TestExecLargeOutput(t *testing.T) {
	f := agenttest.New(t, nil)
	// More than a pipe buffer and several 32 KiB chunks.
	stdout, _, res := f.Run(t, api.ExecRequest{Cmd: []string{"head", "-c", "1000000", "/dev/zero"}})
	if len(stdout) != 1000000 || strings.Trim(stdout, "\x00") != "" || res.ExitCode != 0 {
		t.Errorf("got %d bytes exit %d, want 1000000 zero bytes", len(stdout), res.ExitCode)
	}
}

// TestExecBackgroundHoldsPipes: a background process that keeps stdout
// open does not hold the call after the command exits.
func TestExecBackgroundHoldsPipes(t *testing.T) {
	f := agenttest.New(t, nil)
	stdout, _, res := f.Run(t, api.ExecRequest{Cmd: []string{"sh", "-c", "sleep 1000 & echo $!"}})
	pid, err := strconv.Atoi(strings.TrimSpace(stdout))
	if err != nil {
		t.Fatalf("stdout %q is not a pid", stdout)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if res.ExitCode != 0 {
		t.Errorf("exit %d, want 0", res.ExitCode)
	}
	if agenttest.Dead(pid) {
		t.Errorf("background pid %d died with the command; only a timeout or cancel kills the group", pid)
	}
}
