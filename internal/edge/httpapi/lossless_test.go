package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/control/sandbox"
)

// allBytes is every byte value, twice: output no text encoding survives.
func allBytes() []byte {
	b := make([]byte, 512)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// randomBytes is n bytes that are the same on every run.
func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// execRaw posts req to the run-to-completion exec and returns the status
// and the body as sent, decoded into a map (to see which fields are
// there) and into the result.
func execRaw(t *testing.T, f *apiFixture, id string, req api.ExecRequest) (int, map[string]any, api.ExecResult) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	hr, err := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/sandboxes/"+id+"/exec", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+f.keyA)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	var res api.ExecResult
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("body %q: %v", raw, err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("body %q: %v", raw, err)
	}
	return resp.StatusCode, fields, res
}

// TestExecLossless: a run-to-completion exec returns the exact bytes a
// command wrote: text as text, anything else as base64, each stream on
// its own; and the Go client hands back the bytes.
func TestExecLossless(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	bin := allBytes()
	if _, err := f.ca.WriteFile(f.ctx, id, "all.bin", 0, bytes.NewReader(bin)); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	for _, tc := range []struct {
		name     string
		cmd      string
		encoding string // the request's output_encoding
		// What the server sends: the fields, and their encodings ("" when
		// the field must be absent).
		stdout, stdoutEnc string
		stderr, stderrEnc string
		// The bytes the client decodes.
		wantOut, wantErr []byte
	}{
		{name: "not UTF-8", cmd: `printf '\377\376ok'`,
			stdout: b64([]byte("\xff\xfeok")), stdoutEnc: "base64", wantOut: []byte("\xff\xfeok"), wantErr: []byte{}},
		{name: "text", cmd: `printf 'h\303\251llo <&> \342\202\254\n'; printf 'warn\t\033[1m\n' >&2`,
			stdout: "héllo <&> €\n", stderr: "warn\t\x1b[1m\n", wantOut: []byte("héllo <&> €\n"), wantErr: []byte("warn\t\x1b[1m\n")},
		{name: "each stream on its own", cmd: `printf 'fine'; printf '\200' >&2`,
			stdout: "fine", stderr: b64([]byte{0x80}), stderrEnc: "base64", wantOut: []byte("fine"), wantErr: []byte{0x80}},
		{name: "every byte", cmd: `cat all.bin; cat all.bin >&2`,
			stdout: b64(bin), stdoutEnc: "base64", stderr: b64(bin), stderrEnc: "base64", wantOut: bin, wantErr: bin},
		{name: "utf8 asked", cmd: `printf 'ok'; printf '\377' >&2`, encoding: "utf8",
			stdout: "ok", stderr: b64([]byte{0xff}), stderrEnc: "base64", wantOut: []byte("ok"), wantErr: []byte{0xff}},
		{name: "base64 asked", cmd: `printf 'ok'`, encoding: "base64",
			stdout: "b2s=", stdoutEnc: "base64", stderr: "", stderrEnc: "base64", wantOut: []byte("ok"), wantErr: []byte{}},
		{name: "nothing", cmd: `true`, wantOut: []byte{}, wantErr: []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := api.ExecRequest{Cmd: []string{"sh", "-c", tc.cmd}, OutputEncoding: tc.encoding}
			status, fields, res := execRaw(t, f, id, req)
			if status != http.StatusOK || res.ExitCode != 0 {
				t.Fatalf("status %d, result %+v", status, res)
			}
			for _, x := range []struct{ name, got, want string }{
				{"stdout", res.Stdout, tc.stdout}, {"stderr", res.Stderr, tc.stderr},
				{"stdout_encoding", res.StdoutEncoding, tc.stdoutEnc}, {"stderr_encoding", res.StderrEncoding, tc.stderrEnc},
			} {
				if x.got != x.want {
					t.Errorf("%s = %q, want %q", x.name, x.got, x.want)
				}
			}
			for _, name := range []string{"stdout_encoding", "stderr_encoding"} {
				if _, there := fields[name]; there != (fields[name] == "base64") {
					t.Errorf("%s is %v; it is there when base64 and absent otherwise", name, fields[name])
				}
			}
			got, err := f.ca.Exec(f.ctx, id, req)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal([]byte(got.Stdout), tc.wantOut) || !bytes.Equal([]byte(got.Stderr), tc.wantErr) ||
				got.StdoutEncoding != "" || got.StderrEncoding != "" {
				t.Errorf("client result %q %q (encodings %q %q), want %q %q", got.Stdout, got.Stderr,
					got.StdoutEncoding, got.StderrEncoding, tc.wantOut, tc.wantErr)
			}
			out, err := res.StdoutBytes()
			if err != nil || !bytes.Equal(out, tc.wantOut) {
				t.Errorf("StdoutBytes = %q, %v; want %q", out, err, tc.wantOut)
			}
		})
	}
}

// TestExecStreamBytes: the NDJSON exec stream carries every byte, large
// output merged or not, through the Go client.
func TestExecStreamBytes(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	big := randomBytes(900 << 10)
	if _, err := f.ca.WriteFile(f.ctx, id, "big.bin", 0, bytes.NewReader(big)); err != nil {
		t.Fatal(err)
	}
	st, err := f.ca.ExecStream(f.ctx, id, api.ExecRequest{Cmd: []string{"sh", "-c", `cat big.bin; printf '\377\000' >&2; exit 4`}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	res, err := st.Copy(&out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || !bytes.Equal(out.Bytes(), big) || !bytes.Equal(errb.Bytes(), []byte{0xff, 0}) {
		t.Fatalf("exit %d, %d bytes of stdout (same: %v), stderr %q", res.ExitCode, out.Len(), bytes.Equal(out.Bytes(), big), errb.Bytes())
	}
}

// TestExecTruncation: output past the bound is cut; as text, never inside
// a UTF-8 sequence; as base64, exactly at the bound.
func TestExecTruncation(t *testing.T) {
	f := newAPIFixtureWith(t, func(c *sandbox.Config) { c.MaxOutputBytes = 6 })
	id := f.sandbox(t).ID
	for _, tc := range []struct {
		name, cmd, encoding string
		stdout, enc         string
	}{
		// "abcd€" is 7 bytes; 6 would end inside the euro sign.
		{name: "text cut before a split sequence", cmd: `printf 'abcd\342\202\254'`, stdout: "abcd"},
		{name: "text cut at a whole character", cmd: `printf 'abc\342\202\254x'`, stdout: "abc€"},
		{name: "base64 asked, cut exactly", cmd: `printf 'abcd\342\202\254'`, encoding: "base64",
			stdout: base64.StdEncoding.EncodeToString([]byte("abcd\xe2\x82")), enc: "base64"},
		{name: "not text", cmd: `printf '\377\376\375\374\373\372\371'`,
			stdout: base64.StdEncoding.EncodeToString([]byte("\xff\xfe\xfd\xfc\xfb\xfa")), enc: "base64"},
		{name: "cut inside invalid bytes", cmd: `printf 'abcd\377\202\254'`,
			stdout: base64.StdEncoding.EncodeToString([]byte("abcd\xff\x82")), enc: "base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, res := execRaw(t, f, id, api.ExecRequest{Cmd: []string{"sh", "-c", tc.cmd}, OutputEncoding: tc.encoding})
			if status != http.StatusOK || !res.StdoutTruncated || res.StderrTruncated ||
				res.Stdout != tc.stdout || res.StdoutEncoding != tc.enc {
				t.Fatalf("status %d: stdout %q (%q, truncated %v); want %q (%q, truncated)", status,
					res.Stdout, res.StdoutEncoding, res.StdoutTruncated, tc.stdout, tc.enc)
			}
		})
	}
}

// TestExecOutputEncodingRefused: an output_encoding the server does not
// know is 400 invalid_output_encoding, on both forms of exec.
func TestExecOutputEncodingRefused(t *testing.T) {
	f := newAPIFixture(t)
	id := f.sandbox(t).ID
	for _, path := range []string{"/exec", "/exec/stream"} {
		for _, enc := range []string{"hex", "UTF8", "base64url", " "} {
			body := `{"cmd":["true"],"output_encoding":` + strings.TrimSpace(mustJSON(t, enc)) + `}`
			status, _, e := f.raw(t, http.MethodPost, "/v1/sandboxes/"+id+path, body)
			if status != http.StatusBadRequest || e.Code != "invalid_output_encoding" {
				t.Errorf("%s with %q: %d %q, want 400 invalid_output_encoding", path, enc, status, e.Code)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
