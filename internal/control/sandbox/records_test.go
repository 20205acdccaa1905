package sandbox

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
	"github.com/hutchdev/hutch/internal/base/tenancy"
	"github.com/hutchdev/hutch/internal/store"
)

// kept is the record the service keeps of sandbox id, nil when none.
func (f *liveFixture) kept(t *testing.T, id string) *store.Sandbox {
	t.Helper()
	lv := f.svc.lookup(id)
	if lv == nil {
		t.Fatalf("sandbox %s is not live", id)
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	return lv.kept.rec
}

// TestRecordWrittenThrough: every write through the service replaces the
// kept record, so the next call sees a pause at once, and a call to a
// stopped sandbox is refused.
func TestRecordWrittenThrough(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	if rec := f.kept(t, sb.ID); rec == nil || rec.State != api.StateRunning {
		t.Fatalf("kept after create: %+v; want running", rec)
	}
	if _, err := f.svc.Pause(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if rec := f.kept(t, sb.ID); rec == nil || rec.State != api.StatePaused {
		t.Fatalf("kept after pause: %+v; want paused", rec)
	}
	if _, err := f.svc.Stop(f.ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); !errdefs.HasCode(err, "sandbox_not_running") {
		t.Fatalf("exec after stop = %v; want sandbox_not_running", err)
	}
}

// TestRecordOtherTenant: a kept record is served only to a caller who may
// see it.
func TestRecordOtherTenant(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	other := store.Tenant{ID: ids.New(), Name: "other"}
	if err := f.st.CreateTenant(tenancy.System(context.Background()), other); err != nil {
		t.Fatal(err)
	}
	octx := tenancy.With(context.Background(), tenancy.Principal{TenantID: other.ID, Role: api.RoleAdmin})
	if _, err := f.svc.Exec(octx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); !errdefs.HasCode(err, "sandbox_not_found") {
		t.Fatalf("another tenant's exec = %v; want sandbox_not_found", err)
	}
	if _, err := f.svc.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
		t.Fatalf("the owner's exec: %v", err)
	}
}

// racingStore runs a hook inside GetSandbox, after the record was read.
type racingStore struct {
	store.Store
	mu    sync.Mutex
	after func()
}

func (r *racingStore) GetSandbox(ctx context.Context, id string) (*store.Sandbox, error) {
	rec, err := r.Store.GetSandbox(ctx, id)
	r.mu.Lock()
	fn := r.after
	r.after = nil
	r.mu.Unlock()
	if fn != nil {
		fn()
	}
	return rec, err
}

// TestRecordReadRacingWrite: a read of the store that a write through the
// service overtakes is not kept; the write's record is.
func TestRecordReadRacingWrite(t *testing.T) {
	rs := &racingStore{}
	f := newLiveFixture(t, func(c *Config) { rs.Store = c.Store; c.Store = rs })
	sb := f.create(t)
	f.svc.droppedRecord(sb.ID) // the next call reads the store
	rs.mu.Lock()
	rs.after = func() {
		if _, err := f.svc.Keepalive(f.ctx, sb.ID, api.KeepaliveRequest{ForS: 60}); err != nil {
			t.Error(err)
		}
	}
	rs.mu.Unlock()
	if _, err := f.svc.Exec(f.ctx, sb.ID, api.ExecRequest{Cmd: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if rec := f.kept(t, sb.ID); rec == nil || rec.KeepaliveUntil == nil {
		t.Fatalf("kept %+v; want the keepalive's record", rec)
	}
}

// TestRecordLaterRevisionWins: of two writes that end out of order, the
// later revision is kept.
func TestRecordLaterRevisionWins(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	cur := *f.kept(t, sb.ID)
	newer, older := cur, cur
	newer.Rev, newer.Cwd = cur.Rev+2, "/newer"
	older.Rev, older.Cwd = cur.Rev+1, "/older"
	f.svc.wroteRecord(&newer)
	f.svc.wroteRecord(&older)
	if rec := f.kept(t, sb.ID); rec.Cwd != "/newer" {
		t.Fatalf("kept revision %d (%s); want %d", rec.Rev, rec.Cwd, newer.Rev)
	}
}

// TestRecordExpires: a record kept recordTTL is read again, so a write by
// another control plane on the same store is seen.
func TestRecordExpires(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	if _, err := f.st.UpdateSandbox(f.ctx, sb.ID, func(rec *store.Sandbox) error {
		rec.State = api.StateStopping
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rec, err := f.svc.record(f.ctx, sb.ID)
	if err != nil || rec.State != api.StateRunning {
		t.Fatalf("record while kept = %+v, %v; want the kept one, running", rec, err)
	}
	lv := f.svc.lookup(sb.ID)
	lv.mu.Lock()
	lv.kept.at = lv.kept.at.Add(-recordTTL - time.Millisecond)
	lv.mu.Unlock()
	if rec, err = f.svc.record(f.ctx, sb.ID); err != nil || rec.State != api.StateStopping {
		t.Fatalf("record once expired = %+v, %v; want stopping", rec, err)
	}
	// Put back what Stop in the fixture's cleanup expects.
	if _, err := f.st.UpdateSandbox(f.ctx, sb.ID, func(rec *store.Sandbox) error {
		rec.State = api.StateRunning
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRecordChangedElsewhere: a write the store tells (another control
// plane's) is seen by the next call, long before recordTTL; the telling
// of the service's own write leaves its record kept, and a resync
// forgets every record.
func TestRecordChangedElsewhere(t *testing.T) {
	f := newLiveFixture(t, nil)
	sb := f.create(t)
	own := f.kept(t, sb.ID)
	f.svc.StoreChanged(f.ctx, store.Change{Kind: store.ChangeSandbox, TenantID: own.TenantID, SandboxID: sb.ID, Rev: own.Rev})
	if f.kept(t, sb.ID) == nil {
		t.Fatal("the telling of the service's own write forgot its record")
	}
	set := func(state api.SandboxState) *store.Sandbox {
		t.Helper()
		rec, err := f.st.UpdateSandbox(f.ctx, sb.ID, func(rec *store.Sandbox) error {
			rec.State = state
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	elsewhere := set(api.StateStopping)
	f.svc.StoreChanged(f.ctx, store.Change{Kind: store.ChangeSandbox, TenantID: own.TenantID, SandboxID: sb.ID, Rev: elsewhere.Rev})
	if rec, err := f.svc.record(f.ctx, sb.ID); err != nil || rec.State != api.StateStopping {
		t.Fatalf("record after a write told = %+v, %v; want stopping", rec, err)
	}
	set(api.StateRunning) // what Stop in the fixture's cleanup expects
	f.svc.StoreChanged(f.ctx, store.Change{Kind: store.ChangeResync})
	if f.kept(t, sb.ID) != nil {
		t.Error("a resync left a record kept")
	}
}
