package main

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hutchdev/hutch/api"
)

// TestQuotaFlag: a quota on the command line is a number (0: no limit) or
// "default" (back to the server's); what is not given stays as it was.
func TestQuotaFlag(t *testing.T) {
	five, keep := 5, 7
	for _, tc := range []struct {
		in     string
		float  bool
		want   *int
		wantF  *float64
		refuse bool
	}{
		{in: "0", want: new(int)},
		{in: "5", want: &five},
		{in: "default"},
		{in: "-1", refuse: true},
		{in: "1.5", refuse: true},
		{in: "lots", refuse: true},
		{in: "1.5", float: true, wantF: ptr(1.5)},
		{in: "default", float: true},
	} {
		f := &quotaFlag{float: tc.float}
		err := f.Set(tc.in)
		if (err != nil) != tc.refuse {
			t.Errorf("Set(%q): %v", tc.in, err)
			continue
		}
		if tc.refuse {
			continue
		}
		if tc.float {
			p := ptr(9.0)
			f.applyFloat(&p)
			if (p == nil) != (tc.wantF == nil) || p != nil && *p != *tc.wantF {
				t.Errorf("%q applied: %v, want %v", tc.in, p, tc.wantF)
			}
			continue
		}
		p := &keep
		f.apply(&p)
		if (p == nil) != (tc.want == nil) || p != nil && *p != *tc.want {
			t.Errorf("%q applied: %v, want %v", tc.in, p, tc.want)
		}
	}
	var untouched quotaFlag
	p := &keep
	untouched.apply(&p)
	if p != &keep {
		t.Error("a quota not given changed")
	}
}

func ptr[T any](v T) *T { return &v }

// TestTenantDelete: hutch tenant delete follows the deletion a step at a
// time on stderr and prints the tenant's id once it is deleted; a
// deletion that stopped short fails, saying why and how to go on;
// suspend and resume call their routes.
func TestTenantDelete(t *testing.T) {
	const id = "01m81b6tzw5q2hcj7by01dvd6z"
	s := &recorder{}
	var gets atomic.Int32
	var stopShort atomic.Bool
	at := func(step string, removed api.TenantRemoved, state api.TenantState, why string) api.Tenant {
		return api.Tenant{ID: id, Name: "acme", State: state,
			Deletion: &api.TenantDeletion{By: "k", Step: step, Removed: removed, Error: why}}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("DELETE /v1/tenants/{id}", func(w http.ResponseWriter, r *http.Request) {
		gets.Store(0)
		writeTestJSON(w, http.StatusAccepted, at(api.DeleteStepKeys, api.TenantRemoved{}, api.TenantDeleting, ""))
	})
	mux.HandleFunc("GET /v1/tenants/{id}", func(w http.ResponseWriter, r *http.Request) {
		switch n := gets.Add(1); {
		case n == 1:
			writeTestJSON(w, http.StatusOK, at(api.DeleteStepSandboxes, api.TenantRemoved{Keys: 2}, api.TenantDeleting, ""))
		case stopShort.Load():
			writeTestJSON(w, http.StatusOK, at(api.DeleteStepSandboxes, api.TenantRemoved{Keys: 2}, api.TenantDeleting, "sandboxes: the driver is gone"))
		default:
			writeTestJSON(w, http.StatusOK, at(api.DeleteStepDone, api.TenantRemoved{Keys: 2, Sandboxes: 1, Events: 7}, api.TenantDeleted, ""))
		}
	})
	for _, p := range []string{"POST /v1/tenants/{id}/suspend", "POST /v1/tenants/{id}/resume"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			writeTestJSON(w, http.StatusOK, api.Tenant{ID: id, Name: "acme", State: api.TenantSuspended})
		})
	}
	s.serve(t, mux)

	out, errOut, code, _ := s.run("", "tenant", "delete", id)
	if code != 0 || out != id+"\n" {
		t.Fatalf("delete: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, want := range []string{`deleting tenant "acme"`, "sandboxes…  (removed so far: 2 keys)", `tenant "acme" deleted: 2 keys, 1 sandbox, 7 events`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}

	stopShort.Store(true)
	_, errOut, code, _ = s.run("", "tenant", "delete", id)
	if code != 1 || !strings.Contains(errOut, "the driver is gone") || !strings.Contains(errOut, "hutch tenant delete "+id+" again") {
		t.Errorf("a deletion that stopped short: exit %d, stderr %q", code, errOut)
	}

	for _, verb := range []string{"suspend", "resume"} {
		_, errOut, code, reqs := s.run("", "tenant", verb, id)
		if code != 0 || len(reqs) != 1 || reqs[0] != "POST /v1/tenants/"+id+"/"+verb {
			t.Errorf("tenant %s: exit %d, requests %v, stderr %q", verb, code, reqs, errOut)
		}
	}
}
