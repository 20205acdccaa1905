package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hutchdev/hutch/api"
)

// TestList: ls leaves destroyed sandboxes out unless --all; -q prints
// only ids; --json prints the API's sandboxes.
func TestList(t *testing.T) {
	s := newFakeServer(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", "-q"}, sbRunning + "\n"},
		{[]string{"sandbox", "ls", "-q", "--all"}, sbRunning + "\n" + sbDestroyed + "\n"},
		{[]string{"ls", "-qa"}, sbRunning + "\n" + sbDestroyed + "\n"},
	} {
		if out, errOut, code, _ := s.run("", tc.args...); code != 0 || out != tc.want {
			t.Errorf("hutch %q: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out, errOut, tc.want)
		}
	}
	out, _, _, _ := s.run("", "ls", "--json")
	var list []api.Sandbox
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0].ID != sbRunning {
		t.Errorf("ls --json = %q (%v)", out, err)
	}
}

// TestRemoveAll: rm --all destroys every sandbox not destroyed already;
// ids and --all together are a usage error.
func TestRemoveAll(t *testing.T) {
	s := newFakeServer(t)
	out, errOut, code, reqs := s.run("", "rm", "--all")
	want := []string{"GET /v1/sandboxes", "DELETE /v1/sandboxes/" + sbRunning}
	if code != 0 || out != sbRunning+"\n" {
		t.Errorf("rm --all: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if diff := cmp.Diff(want, reqs); diff != "" {
		t.Errorf("rm --all: requests (-want +got):\n%s", diff)
	}
	for _, args := range [][]string{{"rm"}, {"rm", "--all", sbRunning}} {
		if _, _, code, reqs := s.run("", args...); code != 2 || len(reqs) != 0 {
			t.Errorf("hutch %q: exit %d after %d requests; want 2 and none", args, code, len(reqs))
		}
	}
}

// TestInspect: a JSON array of the sandboxes found; one not found fails
// the command but not the others.
func TestInspect(t *testing.T) {
	s := newFakeServer(t)
	out, errOut, code, _ := s.run("", "inspect", sbRunning, sbDestroyed)
	var list []api.Sandbox
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0].ID != sbRunning {
		t.Errorf("inspect: stdout %q (%v)", out, err)
	}
	if code != 1 || !strings.Contains(errOut, sbDestroyed+": no such sandbox") {
		t.Errorf("inspect: exit %d, stderr %q; want 1 and the missing one named", code, errOut)
	}
}

// TestVerbs: each command sends the request the API expects and prints
// what it says it prints.
func TestVerbs(t *testing.T) {
	s := newFakeServer(t)
	sb := "/v1/sandboxes/" + sbRunning
	for _, tc := range []struct {
		args []string
		req  string // the last request
		out  string
	}{
		{[]string{"sandbox", "create", "--timeout", "1h", "--root"}, `POST /v1/sandboxes {"timeout_s":3600,"root":true}`, sbRunning + "\n"},
		{[]string{"sandbox", "create", "--timeout", "60", "--snapshot", "s1"}, `POST /v1/sandboxes {"snapshot":"s1","timeout_s":60}`, sbRunning + "\n"},
		{[]string{"pause", sbRunning}, "POST " + sb + "/pause", sbRunning + "\n"},
		{[]string{"extend", sbRunning, "90s"}, "POST " + sb + `/timeout {"timeout_s":90}`, ""},
		{[]string{"network", "set", sbRunning, "--allow", "a.example", "--allow", "b.example"},
			"PUT " + sb + `/network {"egress":"allowlist","allow":["a.example","b.example"]}`, ""},
		{[]string{"port", "public", sbRunning, "8080"}, "PUT " + sb + `/ports/8080 {"public":true}`, "http://8080-x.localhost/\n"},
		{[]string{"port", "url", "--ttl", "10m", sbRunning, "8080"}, "POST " + sb + `/ports/8080/url {"expires_in_s":600}`, "http://8080-x.localhost/?hutch_token=t\n"},
		{[]string{"fs", "mkdir", "--mode", "0750", sbRunning, "a/b"}, "POST " + sb + `/files/mkdir {"path":"a/b","mode":"0750"}`, "/w/made\n"},
		{[]string{"fs", "mv", "-f", sbRunning, "a", "b"}, "POST " + sb + `/files/move {"from":"a","to":"b","overwrite":true}`, "/w/made\n"},
		{[]string{"fs", "rm", "-r", sbRunning, "a"}, "DELETE " + sb + "/files?path=a&recursive=true", "a\n"},
		{[]string{"fs", "cat", sbRunning, "a.txt"}, "GET " + sb + "/files?path=a.txt", "hello"},
		{[]string{"snapshot", "create", "--name", "n", sbRunning}, "POST " + sb + `/snapshots {"name":"n"}`, "s1\n"},
		{[]string{"snapshot", "restore", sbRunning, "s1"}, "POST " + sb + `/restore {"snapshot":"s1"}`, sbRunning + "\n"},
		{[]string{"fork", sbRunning, "--count", "2", "--label", "k=v"}, "POST " + sb + `/fork {"count":2,"labels":{"k":"v"}}`, "f1\nf2\n"},
	} {
		out, errOut, code, reqs := s.run("", tc.args...)
		if code != 0 || len(reqs) == 0 || reqs[len(reqs)-1] != tc.req {
			t.Errorf("hutch %q: exit %d, stderr %q, requests %q; want last %s", tc.args, code, errOut, reqs, tc.req)
			continue
		}
		if tc.out != "" && out != tc.out {
			t.Errorf("hutch %q: stdout %q, want %q", tc.args, out, tc.out)
		}
	}
}
