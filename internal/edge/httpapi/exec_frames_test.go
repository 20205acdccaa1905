package httpapi

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
)

// TestExecStreamFrames: asked for binary frames, the exec stream carries
// output byte for byte (no UTF-8 needed) and ends with the exit as JSON;
// asked for nothing, it is NDJSON as before; the Go client takes frames.
func TestExecStreamFrames(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	body := `{"cmd":["sh","-c","printf '\\377\\376ok'; printf e >&2; exit 3"]}`
	post := func(accept string) *http.Response {
		req, err := http.NewRequest("POST", f.srv.URL+"/v1/sandboxes/"+id+"/exec/stream", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+f.keyA)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}

	resp := post(api.MediaExecFrames + ", application/x-ndjson")
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != api.MediaExecFrames {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	br := bufio.NewReader(resp.Body)
	var stdout, stderr []byte
	for {
		kind, b, err := api.ReadExecFrame(br)
		if err != nil {
			t.Fatalf("frame: %v (stdout %q)", err, stdout)
		}
		if kind == api.FrameExit {
			if !strings.Contains(string(b), `"exit_code":3`) {
				t.Fatalf("exit frame %s", b)
			}
			break
		}
		if kind == api.FrameStderr {
			stderr = append(stderr, b...)
		} else {
			stdout = append(stdout, b...)
		}
	}
	if !bytes.Equal(stdout, []byte("\377\376ok")) || string(stderr) != "e" {
		t.Fatalf("stdout %q, stderr %q", stdout, stderr)
	}

	if ct := post("").Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("without Accept: content type %q, want NDJSON", ct)
	}

	st, err := f.ca.ExecStream(f.ctx, id, api.ExecRequest{Cmd: []string{"sh", "-c", "printf '\\377\\376ok'"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []byte
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Data...)
		if ev.Type == api.ExecExit {
			break
		}
	}
	if !bytes.Equal(got, []byte("\377\376ok")) {
		t.Fatalf("through the client: %q", got)
	}
}
