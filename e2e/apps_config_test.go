package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
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

	// The app's processes see the runtime's, in both roles, live too.
	for _, id := range []string{a.Dev, a.Live} {
		var env string
		waitFor(t, "the web process restarted with the config", time.Minute, func() bool {
			res, err := c.Exec(t.Context(), id, api.ExecRequest{Cmd: []string{"sh", "-c",
				`for p in /proc/[0-9]*; do if grep -q dev-server "$p/cmdline" 2>/dev/null; then tr '\0' '\n' < "$p/environ"; fi; done`}})
			if err != nil {
				t.Fatal(err)
			}
			env = res.Stdout
			return strings.Contains(env, "RUNTIME_ONLY=runtime-value")
		})
		wantIn(t, "web process env", env, []string{"RUNTIME_ONLY=runtime-value", "BOTH_SECRET=s3cret-both", "PORT=8080"},
			[]string{"AGENT_ONLY", "PLAIN_CP"})
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
