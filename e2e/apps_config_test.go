package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/client"
)

// TestAppConfig: each config value goes exactly where its access policy
// says (the app's processes, task commands, both, or nowhere in a
// sandbox), a sensitive one is never shown again, and only the key of a
// change reaches the app's log.
func TestAppConfig(t *testing.T) {
	s := startServer(t, "")
	a := createApp(t, s, api.CreateAppRequest{Name: "conf", Preset: "static"}, 2*time.Minute)
	base := "/v1/apps/" + a.ID + "/config"
	set := func(key, value, access string, sensitive bool) {
		t.Helper()
		mustCall(t, s, "POST", base, api.SetConfigRequest{Key: key, Value: &value, Access: access, Sensitive: &sensitive}, nil, http.StatusCreated)
	}
	set("PLAIN_CP", "cp-value", "", false)
	set("RUNTIME_ONLY", "runtime-value", api.AccessRuntime, false)
	set("AGENT_ONLY", "agent-value", api.AccessAgent, false)
	set("BOTH_SECRET", "s3cret-both", api.AccessBoth, true)

	var list api.ConfigList
	mustCall(t, s, "GET", base, nil, &list, http.StatusOK)
	for _, e := range list.Config {
		if e.Key == "BOTH_SECRET" && (e.Value != "" || !e.Sensitive) {
			t.Errorf("the sensitive value is shown: %+v", e)
		}
		if e.Key == "PLAIN_CP" && (e.Value != "cp-value" || e.Access != api.AccessControlPlane) {
			t.Errorf("plain entry %+v", e)
		}
	}
	if st, code := call(t, s.url, s.key, "POST", base, api.SetConfigRequest{Key: "X", Value: ptr("v"), Access: "everywhere"}, nil); st != 400 || code != "invalid_access" {
		t.Errorf("bad access: %d %s", st, code)
	}
	if st, code := call(t, s.url, s.key, "POST", base, api.SetConfigRequest{Key: "1X", Value: ptr("v")}, nil); st != 400 || code != "invalid_config_key" {
		t.Errorf("bad key: %d %s", st, code)
	}
	if st, code := call(t, s.url, s.key, "PATCH", base+"/BOTH_SECRET", api.SetConfigRequest{Sensitive: ptr(false)}, nil); st != 400 || code != "config_sensitive" {
		t.Errorf("unmarking a sensitive value: %d %s", st, code)
	}

	// A task's command sees the agent's config and nothing else.
	task := runTask(t, s, a.ID, "sh", "-c", "env > /tmp/task-env")
	if task.Status != api.TaskSucceeded {
		t.Fatalf("task: %+v", task)
	}
	c := s.client()
	taskEnv, err := readFile(t.Context(), c, a.Dev, "/tmp/task-env")
	if err != nil {
		t.Fatal(err)
	}
	wantIn(t, "task env", taskEnv, []string{"AGENT_ONLY=agent-value", "BOTH_SECRET=s3cret-both", "HUTCH_APP_ROLE=dev"},
		[]string{"RUNTIME_ONLY", "PLAIN_CP", "cp-value"})

	// The app's processes get the runtime's config, in both roles: a
	// process the app adds to its manifest reads the web process's
	// environment. Nothing else in the sandbox can read it out of them
	// or take their ids, not a plain exec, a task or root, which holds no
	// capability in a sandbox of the user's (docs/SECURITY.md, row 30).
	for _, r := range []struct{ role, id string }{{api.RoleDev, a.Dev}, {api.RoleLive, a.Live}} {
		pid := webPID(t, s, a.ID, r.role)
		manifest := fmt.Sprintf(`version: 1
web:
  command: node dev-server.mjs
  port: 8080
  health_path: /
workers:
  - name: peek
    command: tr '\0' '\n' < /proc/%d/environ; exec sleep 100000
build:
  command: ""
`, pid)
		if _, err := c.WriteFile(t.Context(), r.id, "/workspace/sandbox.yaml", 0o644, strings.NewReader(manifest)); err != nil {
			t.Fatal(err)
		}
		var env string
		waitFor(t, r.role+"'s app reading its web process", time.Minute, func() bool {
			env = appLog(t, s, a.ID, r.role, "peek")
			return strings.Contains(env, "PORT=")
		})
		wantIn(t, r.role+" web process env", env, []string{"RUNTIME_ONLY=runtime-value", "BOTH_SECRET=s3cret-both", "PORT=8080"},
			[]string{"AGENT_ONLY", "PLAIN_CP"})
		// The user may signal the app's processes (the same uid), but
		// they dump no core for it to read.
		if out := execOut(t, c, r.id, false, fmt.Sprintf(`awk '/^Max core file size/{print $5, $6}' /proc/%d/limits`, pid)); out != "0 0\n" {
			t.Errorf("%s web process's core limit: %q, want 0 0", r.role, out)
		}
		attack := readProcs(pid)
		for _, asRoot := range []bool{false, true} {
			out := execOut(t, c, r.id, asRoot, attack)
			wantIn(t, fmt.Sprintf("%s: an exec (root %v) reading the web process", r.role, asRoot), out,
				[]string{"environ refused", "mem refused", "ids refused"}, []string{"runtime-value", "s3cret-both", "opened"})
		}
		if r.role != api.RoleDev {
			continue
		}
		task := runTask(t, s, a.ID, "sh", "-c", "{\n"+attack+"\n} > /tmp/task-read 2>&1; true")
		if task.Status != api.TaskSucceeded {
			t.Fatalf("task: %+v", task)
		}
		out, err := readFile(t.Context(), c, a.Dev, "/tmp/task-read")
		if err != nil {
			t.Fatal(err)
		}
		// The task's own environment holds BOTH_SECRET: only the
		// runtime's own value must not be there.
		wantIn(t, "a task reading the web process", out, []string{"environ refused", "mem refused", "ids refused"},
			[]string{"runtime-value", "opened"})
	}
	// A plain exec in the sandbox sees none of it.
	res, err := c.Exec(t.Context(), a.Dev, api.ExecRequest{Cmd: []string{"env"}})
	if err != nil {
		t.Fatal(err)
	}
	wantIn(t, "exec env", res.Stdout, nil, []string{"RUNTIME_ONLY", "AGENT_ONLY", "BOTH_SECRET", "s3cret", "PLAIN_CP"})

	// The log names keys, never values.
	var evs api.EventList
	mustCall(t, s, "GET", "/v1/apps/"+a.ID+"/events?type=config.updated", nil, &evs, http.StatusOK)
	if len(evs.Events) != 4 {
		t.Errorf("%d config.updated events, want 4", len(evs.Events))
	}
	for _, e := range evs.Events {
		if strings.Contains(e.Message, "value") || e.Data["key"] == nil {
			t.Errorf("config event %+v", e)
		}
	}
	if strings.Contains(s.stderr.String(), "s3cret-both") {
		t.Error("the sensitive value is in the server's log")
	}
	// The CLI lists what the API holds, and never a sensitive value.
	for _, tc := range []struct {
		args []string
		in   []string
		out  []string
	}{
		{[]string{"app", "config", "conf"}, []string{"PLAIN_CP", "cp-value", "BOTH_SECRET", "(sensitive)"}, []string{"s3cret"}},
		{[]string{"app", "tasks", "conf"}, []string{task.ID, "succeeded"}, nil},
		{[]string{"app", "checkpoints", "conf"}, []string{"task", "initial"}, nil},
		{[]string{"app", "ls", "--json"}, []string{`"name": "conf"`}, nil},
		{[]string{"app", "set", "conf"}, nil, nil}, // not a command: usage, exit 2
	} {
		out, errOut, code := s.cli("", tc.args...)
		if tc.in == nil {
			if code != 2 {
				t.Errorf("hutch %v: exit %d, want 2", tc.args, code)
			}
			continue
		}
		if code != 0 {
			t.Errorf("hutch %v: exit %d: %s", tc.args, code, errOut)
		}
		wantIn(t, strings.Join(tc.args, " "), out, tc.in, tc.out)
	}

	mustCall(t, s, "DELETE", base+"/AGENT_ONLY", nil, nil, http.StatusNoContent)
	if st, code := call(t, s.url, s.key, "DELETE", base+"/AGENT_ONLY", nil, nil); st != 404 || code != "config_not_found" {
		t.Errorf("second delete: %d %s", st, code)
	}
}

// webPID is the pid, in its sandbox, of the web process of app's role,
// once it runs.
func webPID(t *testing.T, s *server, appID, role string) int {
	t.Helper()
	pid := 0
	waitFor(t, role+"'s web process running", time.Minute, func() bool {
		var ps api.AppProcesses
		mustCall(t, s, "GET", "/v1/apps/"+appID+"/processes?role="+role, nil, &ps, http.StatusOK)
		for _, p := range ps.Processes {
			if p.Web && p.State == api.AppProcessRunning {
				pid = p.Pid
			}
		}
		return pid > 0
	})
	return pid
}

// appLog is the log of the process called name of app's role, its lines
// one after another.
func appLog(t *testing.T, s *server, appID, role, name string) string {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+"/v1/apps/"+appID+"/processes/"+name+"/logs?tail=200&role="+role, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l api.AppLogLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			b.WriteString(l.Line + "\n")
		}
	}
	return b.String()
}

// readProcs is a shell script that tries to read the environment and the
// memory of process pid, then to take its ids and read its environment,
// then every process's environment, and says what it was refused.
func readProcs(pid int) string {
	return fmt.Sprintf(`for f in environ mem; do
			if (exec 3< /proc/%[1]d/$f) 2>/dev/null; then echo "$f opened"; else echo "$f refused"; fi
		done
		tr '\0' '\n' < /proc/%[1]d/environ
		set -- $(awk '/^Uid:/{u=$2} /^Gid:/{g=$2} END{print u, g}' /proc/%[1]d/status)
		setpriv --reuid "$1" --regid "$2" --clear-groups cat /proc/%[1]d/environ || echo "ids refused"
		for p in /proc/[0-9]*; do tr '\0' '\n' < "$p/environ"; done 2>/dev/null`, pid)
}

// execOut runs script with sh in sandbox id, as root when asked, and
// returns its output, stdout then stderr.
func execOut(t *testing.T, c *client.Client, id string, root bool, script string) string {
	t.Helper()
	res, err := c.Exec(t.Context(), id, api.ExecRequest{Cmd: []string{"sh", "-c", script}, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return res.Stdout + res.Stderr
}

// wantIn checks that text holds every one of in and none of out.
func wantIn(t *testing.T, what, text string, in, out []string) {
	t.Helper()
	for _, w := range in {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
	for _, w := range out {
		if strings.Contains(text, w) {
			t.Errorf("%s holds %q:\n%s", what, w, text)
		}
	}
}
