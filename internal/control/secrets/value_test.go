package secrets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
)

const leak = "sk-RECOGNISABLE-0123456789"

// shows returns every way of showing v the package's callers might reach
// for: fmt's verbs, slog's JSON and text handlers and encoding/json.
func shows(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		out = append(out, f+": "+fmt.Sprintf(f, v))
	}
	out = append(out, fmt.Sprint(v), fmt.Sprintln(v))
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "v", v)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "v", v)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", slog.Any("v", v), slog.Group("g", "v", v))
	out = append(out, buf.String())
	if b, err := json.Marshal(v); err == nil {
		out = append(out, "json: "+string(b))
	}
	return out
}

func TestValueRedacts(t *testing.T) {
	v := NewValue([]byte(leak))
	type exported struct{ V Value }
	type unexported struct{ v Value }
	for _, x := range []any{v, &v, exported{v}, &exported{v}, unexported{v}, []Value{v}, map[string]Value{"k": v}} {
		for _, s := range shows(t, x) {
			if strings.Contains(s, leak) || strings.Contains(s, fmt.Sprint([]byte(leak))) || strings.Contains(s, fmt.Sprintf("%x", leak)) {
				t.Errorf("%T shows its value: %s", x, s)
			}
		}
	}
	if got := fmt.Sprint(v); got != api.Redacted {
		t.Errorf("Sprint = %q, want %q", got, api.Redacted)
	}
	if b, _ := json.Marshal(exported{v}); string(b) != `{"V":"[redacted]"}` {
		t.Errorf("JSON = %s", b)
	}
	if v.Len() != len(leak) || string(v.bytes()) != leak || (Value{}).Len() != 0 {
		t.Error("Len or bytes wrong")
	}
}

// api.SecretValue travels in request bodies: JSON carries it, nothing
// else shows it.
func TestAPISecretValueRedacts(t *testing.T) {
	req := api.CreateSecretRequest{Name: "N", Value: leak}
	rep := api.ReplaceSecretRequest{Value: leak}
	for _, x := range []any{req.Value, req, &req, rep, &rep} {
		for _, s := range shows(t, x) {
			if strings.HasPrefix(s, "json: ") {
				continue
			}
			if strings.Contains(s, leak) {
				t.Errorf("%T shows its value: %s", x, s)
			}
		}
	}
	b, err := json.Marshal(req)
	if err != nil || !strings.Contains(string(b), `"value":"`+leak+`"`) {
		t.Errorf("request JSON = %s, %v; want the value in it", b, err)
	}
	var back api.CreateSecretRequest
	if err := json.Unmarshal(b, &back); err != nil || string(back.Value) != leak {
		t.Errorf("request JSON does not round-trip: %v", err)
	}
}
