package secrets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/control/events"
	"github.com/hutchdev/hutch/internal/store"
)

// wantCode fails t unless err is of class with code.
func wantCode(t *testing.T, what string, err, class error, code string) {
	t.Helper()
	_, got, _ := errdefs.Classify(err)
	if !errors.Is(err, class) || got != code {
		t.Errorf("%s: error %v (code %q), want class %v code %q", what, err, got, class, code)
	}
}

func newService(t *testing.T, cfg Config) (*Service, store.Store, *bytes.Buffer) {
	t.Helper()
	st := openStore(t)
	log, logs := logBuffer()
	return New(cfg, st, newTestSealer(t), events.New(st, events.Config{}), log), st, logs
}

func TestServiceLifecycle(t *testing.T) {
	svc, st, logs := newService(t, Config{})
	ctx := newTenant(t, st, "a")
	const value = "sk-live-RECOGNISABLE-42"

	sec, err := svc.Create(ctx, Spec{Name: "OPENAI_API_KEY", Description: "for the gateway"}, NewValue([]byte(value)))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	// The answers are api.Secret, which has no room for the sealed value.
	if sec.ValueBytes != len(value) || sec.Name != "OPENAI_API_KEY" || sec.Description != "for the gateway" {
		t.Errorf("Create returned %+v; want its metadata", sec)
	}
	got, err := svc.Reveal(ctx, "OPENAI_API_KEY")
	if err != nil || string(got) != value {
		t.Fatalf("Reveal = %d bytes, %v", len(got), err)
	}

	// What the store holds is sealed.
	row, err := st.GetSecret(ctx, "OPENAI_API_KEY")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(row.Ciphertext, []byte(value)) || len(row.Nonce) != NonceSize || row.KeyID != svc.sealer.KeyID() {
		t.Errorf("stored row %+v is not sealed as expected", row)
	}

	wantCode(t, "duplicate", func() error {
		_, err := svc.Create(ctx, Spec{Name: "OPENAI_API_KEY"}, NewValue([]byte("x")))
		return err
	}(), errdefs.ErrConflict, "secret_exists")

	// Replace keeps the description unless given one.
	rep, err := svc.Replace(ctx, "OPENAI_API_KEY", nil, NewValue([]byte("rotated")))
	if err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if rep.Description != "for the gateway" || rep.ValueBytes != 7 || !rep.CreatedAt.Equal(sec.CreatedAt) {
		t.Errorf("Replace returned %+v", rep)
	}
	if got, _ := svc.Reveal(ctx, "OPENAI_API_KEY"); string(got) != "rotated" {
		t.Errorf("Reveal after Replace = %q", got)
	}
	desc := ""
	if rep, err := svc.Replace(ctx, "OPENAI_API_KEY", &desc, NewValue([]byte("again"))); err != nil || rep.Description != "" {
		t.Errorf("Replace with an empty description: %+v, %v", rep, err)
	}
	_, err = svc.Replace(ctx, "MISSING", nil, NewValue([]byte("x")))
	wantCode(t, "replace of a missing secret", err, errdefs.ErrNotFound, "secret_not_found")

	if _, err := svc.Create(ctx, Spec{Name: "B_SECOND"}, NewValue([]byte("b"))); err != nil {
		t.Fatal(err)
	}
	list, err := svc.List(ctx)
	if err != nil || len(list.Secrets) != 2 || list.Secrets[0].Name != "B_SECOND" || list.Secrets[1].Name != "OPENAI_API_KEY" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if g, err := svc.Get(ctx, "B_SECOND"); err != nil || g.ValueBytes != 1 || g.Name != "B_SECOND" {
		t.Errorf("Get = %+v, %v", g, err)
	}

	if err := svc.Delete(ctx, "B_SECOND"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantCode(t, "second delete", svc.Delete(ctx, "B_SECOND"), errdefs.ErrNotFound, "secret_not_found")
	_, err = svc.Reveal(ctx, "B_SECOND")
	wantCode(t, "reveal after delete", err, errdefs.ErrNotFound, "secret_not_found")

	// Events name the secrets and hold no value.
	evs, _, err := st.ListEvents(ctx, store.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
		b, _ := json.Marshal(e)
		for _, v := range []string{value, "rotated", "again"} {
			if strings.Contains(string(b), v) {
				t.Errorf("event %s holds a value: %s", e.Type, b)
			}
		}
		if e.Data["name"] == nil || e.SandboxID != "" {
			t.Errorf("event %+v: want the secret's name and no sandbox", e)
		}
	}
	want := []string{api.EventSecretCreated, api.EventSecretUpdated, api.EventSecretUpdated, api.EventSecretCreated, api.EventSecretDeleted}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Errorf("events %v, want %v", types, want)
	}
	for _, v := range []string{value, "rotated"} {
		if strings.Contains(logs.String(), v) {
			t.Errorf("the log holds a value: %s", logs)
		}
	}
}

func TestServiceChecks(t *testing.T) {
	svc, st, _ := newService(t, Config{MaxValueBytes: 10})
	ctx := newTenant(t, st, "a")
	create := func(name, desc, value string) error {
		_, err := svc.Create(ctx, Spec{Name: name, Description: desc}, NewValue([]byte(value)))
		return err
	}
	if err := create("MAX", "", strings.Repeat("v", 10)); err != nil {
		t.Errorf("a value at the limit: %v", err)
	}
	tooLarge := strings.Repeat("V", 11)
	err := create("BIG", "", tooLarge)
	wantCode(t, "over the limit", err, errdefs.ErrTooLarge, "secret_too_large")
	if err != nil && strings.Contains(err.Error(), tooLarge) {
		t.Errorf("error holds the value: %v", err)
	}
	_, err = svc.Replace(ctx, "MAX", nil, NewValue([]byte(tooLarge)))
	wantCode(t, "replace over the limit", err, errdefs.ErrTooLarge, "secret_too_large")
	wantCode(t, "empty", create("EMPTY", "", ""), errdefs.ErrInvalid, "invalid_secret_value")
	wantCode(t, "bad name", create("a/b", "", "v"), errdefs.ErrInvalid, "invalid_secret_name")
	wantCode(t, "long description", create("D", strings.Repeat("d", api.MaxSecretDescription+1), "v"), errdefs.ErrInvalid, "invalid_secret")
	_, err = svc.Get(ctx, "..")
	wantCode(t, "get of a bad name", err, errdefs.ErrInvalid, "invalid_secret_name")
	wantCode(t, "delete of a bad name", svc.Delete(ctx, "-x"), errdefs.ErrInvalid, "invalid_secret_name")

	for _, c := range []context.Context{context.Background(), tenancy.System(context.Background())} {
		_, err := svc.Create(c, Spec{Name: "X"}, NewValue([]byte("v")))
		wantCode(t, "create without principal", err, errdefs.ErrForbidden, "no_tenant")
		_, err = svc.Reveal(c, "MAX")
		wantCode(t, "reveal without principal", err, errdefs.ErrForbidden, "no_tenant")
		_, err = svc.List(c)
		wantCode(t, "list without principal", err, errdefs.ErrForbidden, "no_tenant")
		wantCode(t, "delete without principal", svc.Delete(c, "MAX"), errdefs.ErrForbidden, "no_tenant")
	}
}

func TestServiceTenants(t *testing.T) {
	svc, st, _ := newService(t, Config{})
	a := newTenant(t, st, "a")
	b := newTenant(t, st, "b")
	if _, err := svc.Create(a, Spec{Name: "SHARED_NAME"}, NewValue([]byte("a's value"))); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Reveal(b, "SHARED_NAME")
	wantCode(t, "B reveals A's secret", err, errdefs.ErrNotFound, "secret_not_found")
	_, err = svc.Get(b, "SHARED_NAME")
	wantCode(t, "B gets A's secret", err, errdefs.ErrNotFound, "secret_not_found")
	_, err = svc.Replace(b, "SHARED_NAME", nil, NewValue([]byte("b's")))
	wantCode(t, "B replaces A's secret", err, errdefs.ErrNotFound, "secret_not_found")
	wantCode(t, "B deletes A's secret", svc.Delete(b, "SHARED_NAME"), errdefs.ErrNotFound, "secret_not_found")
	if list, err := svc.List(b); err != nil || len(list.Secrets) != 0 {
		t.Errorf("B lists %+v, %v", list, err)
	}

	// B may use the same name; each opens its own.
	if _, err := svc.Create(b, Spec{Name: "SHARED_NAME"}, NewValue([]byte("b's value"))); err != nil {
		t.Fatal(err)
	}
	if v, _ := svc.Reveal(a, "SHARED_NAME"); string(v) != "a's value" {
		t.Errorf("A reveals %q", v)
	}
	if v, _ := svc.Reveal(b, "SHARED_NAME"); string(v) != "b's value" {
		t.Errorf("B reveals %q", v)
	}

	// A's ciphertext copied into B's row, or into another of A's names,
	// does not open.
	rowA, err := st.GetSecret(a, "SHARED_NAME")
	if err != nil {
		t.Fatal(err)
	}
	moveInto := func(ctx context.Context, name string) {
		if _, err := st.UpdateSecret(ctx, name, func(s *store.Secret) error {
			s.Nonce, s.Ciphertext, s.KeyID = rowA.Nonce, rowA.Ciphertext, rowA.KeyID
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	moveInto(b, "SHARED_NAME")
	_, err = svc.Reveal(b, "SHARED_NAME")
	wantCode(t, "A's ciphertext in B's row", err, errdefs.ErrUnavailable, "secret_unreadable")
	if !errors.Is(err, ErrOpen) || strings.Contains(err.Error(), "a's value") {
		t.Errorf("error %v: want ErrOpen without the value", err)
	}
	if _, err := svc.Create(a, Spec{Name: "OTHER_NAME"}, NewValue([]byte("other"))); err != nil {
		t.Fatal(err)
	}
	moveInto(a, "OTHER_NAME")
	_, err = svc.Reveal(a, "OTHER_NAME")
	wantCode(t, "ciphertext under another name", err, errdefs.ErrUnavailable, "secret_unreadable")
}

// TestServiceRawStore: the database file holds ciphertext only.
func TestServiceRawStore(t *testing.T) {
	dir := t.TempDir()
	log, _ := logBuffer()
	st := openStoreAt(t, filepath.Join(dir, "hutch.db"))
	svc := New(Config{}, st, newTestSealer(t), events.New(st, events.Config{}), log)
	ctx := newTenant(t, st, "a")
	const value = "RAW-FILE-CANARY-7f3a9c"
	if _, err := svc.Create(ctx, Spec{Name: "CANARY"}, NewValue([]byte(value))); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Replace(ctx, "CANARY", nil, NewValue([]byte(value+"-2"))); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(value)) {
			t.Errorf("%s holds the value", e.Name())
		}
	}
	if len(entries) < 2 {
		t.Errorf("found %d database files; want the database and its WAL", len(entries))
	}
}
