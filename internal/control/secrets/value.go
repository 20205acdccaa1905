package secrets

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/hutchdev/hutch/api"
)

// Value is a secret's plaintext inside the control plane. Every way of
// showing it shows api.Redacted: fmt's verbs (%v, %+v, %#v, %s, %q, %x…),
// log/slog, encoding/json and encoding.TextMarshaler users. Its bytes are
// held by a closure, so even a Value in an unexported field, which fmt
// prints by reflection without calling its methods, shows as a function's
// address, never as its bytes.
//
// The zero Value is empty.
type Value struct {
	b func() []byte
}

// NewValue returns a Value holding b; the Value owns b from then on.
func NewValue(b []byte) Value { return Value{b: func() []byte { return b }} }

// Len returns the value's length in bytes.
func (v Value) Len() int { return len(v.bytes()) }

// bytes returns the plaintext itself.
func (v Value) bytes() []byte {
	if v.b == nil {
		return nil
	}
	return v.b()
}

// String returns api.Redacted.
func (Value) String() string { return api.Redacted }

// GoString returns api.Redacted, quoted.
func (Value) GoString() string { return `"` + api.Redacted + `"` }

// Format prints api.Redacted whatever the verb.
func (Value) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, api.Redacted) }

// LogValue returns api.Redacted.
func (Value) LogValue() slog.Value { return slog.StringValue(api.Redacted) }

// MarshalJSON returns api.Redacted as a JSON string: values are write-only.
func (Value) MarshalJSON() ([]byte, error) { return []byte(`"` + api.Redacted + `"`), nil }

// MarshalText returns api.Redacted.
func (Value) MarshalText() ([]byte, error) { return []byte(api.Redacted), nil }
