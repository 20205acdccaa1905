package envelope_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hutchdev/hutch/internal/agent/confine"
	"github.com/hutchdev/hutch/internal/agent/envelope"
)

func validEnvelope() *envelope.Envelope {
	return &envelope.Envelope{
		Version:       envelope.Version,
		SandboxID:     "sb-1",
		Token:         strings.Repeat("t", 32),
		Socket:        "/run/hutch/agent.sock",
		Root:          "/sandbox",
		Workdir:       "/sandbox/work",
		Env:           map[string]string{"A": "1", "EMPTY": ""},
		MaxFileBytes:  1 << 20,
		MaxTarBytes:   1 << 30,
		MaxTarEntries: 1000,
		Confine: &confine.Config{
			NoNewPrivs: true,
			Landlock:   &confine.Landlock{ReadOnly: []string{"/usr"}, ReadWrite: []string{"/sandbox"}, ConnectPorts: []uint16{3128}},
			Rlimits:    []confine.Rlimit{{Resource: "nofile", Cur: 1024, Max: 4096}},
		},
	}
}

// frame is a length prefix of n followed by body.
func frame(n uint32, body string) []byte {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], n)
	return append(hdr[:], body...)
}

func framed(body string) []byte { return frame(uint32(len(body)), body) }

func jsonOf(t *testing.T, e *envelope.Envelope) string {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEncodeDecode(t *testing.T) {
	want := validEnvelope()
	var buf bytes.Buffer
	if err := envelope.Encode(&buf, want); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("rest of stdin")
	got, err := envelope.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	if buf.String() != "rest of stdin" {
		t.Errorf("Decode read past its frame: %q left", buf.String())
	}
	for _, root := range []struct{ root, workdir string }{{"/", "/"}, {"/", "/home"}, {"/sandbox", "/sandbox"}} {
		e := validEnvelope()
		e.Root, e.Workdir = root.root, root.workdir
		if _, err := envelope.Decode(bytes.NewReader(framed(jsonOf(t, e)))); err != nil {
			t.Errorf("root %s workdir %s: %v", root.root, root.workdir, err)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := jsonOf(t, validEnvelope())
	edit := func(f func(e *envelope.Envelope)) []byte {
		e := validEnvelope()
		f(e)
		return framed(jsonOf(t, e))
	}
	tests := []struct {
		name   string
		in     []byte
		errHas string
	}{
		{"empty", nil, "read envelope length"},
		{"short length", []byte{0, 0}, "read envelope length"},
		{"zero length", frame(0, ""), "outside 1.."},
		{"oversize length", frame(envelope.MaxSize+1, good), "outside 1.."},
		{"huge length", frame(0xffffffff, good), "outside 1.."},
		{"short body", frame(uint32(len(good)+10), good), "read envelope body"},
		{"not JSON", framed("not json"), "decode envelope"},
		{"JSON array", framed("[1,2]"), "decode envelope"},
		{"unknown field", framed(strings.Replace(good, `{`, `{"surprise":1,`, 1)), "unknown field"},
		{"unknown nested field", framed(strings.Replace(good, `"no_new_privs"`, `"nope":1,"no_new_privs"`, 1)), "unknown field"},
		{"wrong type", framed(strings.Replace(good, `"version":2`, `"version":"2"`, 1)), "decode envelope"},
		{"trailing value", framed(good + ` {}`), "trailing data"},
		{"trailing garbage", framed(good + ` x`), "trailing data"},
		{"version", edit(func(e *envelope.Envelope) { e.Version = envelope.Version + 1 }), "version 3"},
		{"no version", edit(func(e *envelope.Envelope) { e.Version = 0 }), "version 0"},
		{"no sandbox id", edit(func(e *envelope.Envelope) { e.SandboxID = "" }), "no sandbox id"},
		{"short token", edit(func(e *envelope.Envelope) { e.Token = strings.Repeat("t", 31) }), "token"},
		{"relative socket", edit(func(e *envelope.Envelope) { e.Socket = "agent.sock" }), "socket"},
		{"no socket", edit(func(e *envelope.Envelope) { e.Socket = "" }), "socket"},
		{"listen and socket", edit(func(e *envelope.Envelope) { e.Listen = ":49982" }), "listen excludes"},
		{"listen without port", edit(func(e *envelope.Envelope) { e.Socket, e.Listen = "", "10.0.0.1" }), "host:port"},
		{"listen on port 0", edit(func(e *envelope.Envelope) { e.Socket, e.Listen = "", ":0" }), "host:port"},
		{"relative root", edit(func(e *envelope.Envelope) { e.Root, e.Workdir = "sandbox", "sandbox/work" }), "root"},
		{"unclean root", edit(func(e *envelope.Envelope) { e.Root = "/sandbox/" }), "root"},
		{"root with ..", edit(func(e *envelope.Envelope) { e.Root, e.Workdir = "/a/../sandbox", "/sandbox/work" }), "root"},
		{"workdir outside root", edit(func(e *envelope.Envelope) { e.Workdir = "/elsewhere" }), "workdir"},
		{"workdir sharing a prefix", edit(func(e *envelope.Envelope) { e.Workdir = "/sandboxes" }), "workdir"},
		{"unclean workdir", edit(func(e *envelope.Envelope) { e.Workdir = "/sandbox/work/../work" }), "workdir"},
		{"relative workdir", edit(func(e *envelope.Envelope) { e.Workdir = "work" }), "workdir"},
		{"zero max_file_bytes", edit(func(e *envelope.Envelope) { e.MaxFileBytes = 0 }), "max_file_bytes"},
		{"negative max_file_bytes", edit(func(e *envelope.Envelope) { e.MaxFileBytes = -1 }), "max_file_bytes"},
		{"negative max_tar_bytes", edit(func(e *envelope.Envelope) { e.MaxTarBytes = -1 }), "max_tar_bytes"},
		{"negative max_tar_entries", edit(func(e *envelope.Envelope) { e.MaxTarEntries = -1 }), "max_tar_entries"},
		{"empty env name", edit(func(e *envelope.Envelope) { e.Env[""] = "x" }), "env name"},
		{"= in env name", edit(func(e *envelope.Envelope) { e.Env["A=B"] = "x" }), "env name"},
		{"NUL in env name", edit(func(e *envelope.Envelope) { e.Env["A\x00"] = "x" }), "env name"},
		{"NUL in env value", edit(func(e *envelope.Envelope) { e.Env["B"] = "x\x00y" }), "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := envelope.Decode(bytes.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("Decode = %+v, %v; want an error containing %q", e, err, tt.errHas)
			}
		})
	}
}

// TestDecodeTrailingClosers: a stray "]" or "}" after the object is
// trailing data too (json.Decoder.More alone would let these through).
func TestDecodeTrailingClosers(t *testing.T) {
	good := jsonOf(t, validEnvelope())
	for _, tail := range []string{"]", "}", " ] "} {
		_, err := envelope.Decode(bytes.NewReader(framed(good + tail)))
		if err == nil || !strings.Contains(err.Error(), "trailing") {
			t.Errorf("trailing %q: %v, want a trailing-data error", tail, err)
		}
	}
}

func TestEncodeRefusesOversize(t *testing.T) {
	e := validEnvelope()
	e.Env["BIG"] = strings.Repeat("x", envelope.MaxSize)
	var buf bytes.Buffer
	if err := envelope.Encode(&buf, e); err == nil || buf.Len() != 0 {
		t.Errorf("Encode of an oversize envelope = %v with %d bytes written", err, buf.Len())
	}
}

func FuzzDecode(f *testing.F) {
	good := validEnvelope()
	var buf bytes.Buffer
	envelope.Encode(&buf, good)
	f.Add(buf.Bytes())
	f.Add(framed(`{"version":1,"sandbox_id":"s","token":"0123456789abcdef0123456789abcdef","socket":"/s","root":"/","workdir":"/","max_file_bytes":1,"env":{},"confine":{}}`))
	f.Add(framed(`{"VERSION":1,"version":1,"sandbox_id":"\u00e9\ufffd","token":"0123456789abcdef0123456789abcdef","socket":"/s","root":"/r","workdir":"/r/w","max_file_bytes":9007199254740993,"confine":null}`))
	f.Add(framed("{}"))
	f.Add(frame(0, ""))
	f.Add(frame(envelope.MaxSize+1, "x"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := envelope.Decode(bytes.NewReader(in))
		if err != nil {
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("Decode returned an invalid envelope: %v", err)
		}
		var out bytes.Buffer
		if err := envelope.Encode(&out, e); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := envelope.Decode(&out)
		if err != nil {
			t.Fatalf("re-decode of %q: %v", out.Bytes(), err)
		}
		if d := cmp.Diff(e, again, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("decode, encode, decode changed it (-first +second):\n%s", d)
		}
	})
}

// TestListenInsteadOfSocket: an envelope may name a TCP address for the
// agent to listen on instead of a socket (the kubernetes driver's).
func TestListenInsteadOfSocket(t *testing.T) {
	e := validEnvelope()
	e.Socket, e.Listen = "", ":49982"
	var buf bytes.Buffer
	if err := envelope.Encode(&buf, e); err != nil {
		t.Fatal(err)
	}
	got, err := envelope.Decode(&buf)
	if err != nil || got.Listen != ":49982" || got.Socket != "" {
		t.Fatalf("decode: %+v, %v", got, err)
	}
}
