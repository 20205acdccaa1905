package store

import (
	"context"
	"time"

	"github.com/hutchdev/hutch/api"
	"github.com/hutchdev/hutch/internal/base/errdefs"
	"github.com/hutchdev/hutch/internal/base/ids"
)

// What every implementation does with a record before it writes it:
// the caller's scope decides its tenant, a new one gets an ID, and the
// Check functions validate and normalise it. Each Prepare* is one
// create's, the Updated* one update's after the caller's fn ran, so
// backends never differ in what they accept.

// PrepareTenant readies CreateTenant's tenant and its first keys: only
// an admin or the system creates tenants, and each key must be the
// tenant's and one its caller may create.
func PrepareTenant(ctx context.Context, t *Tenant, keys []Key) error {
	sc, err := ScopeOf(ctx)
	if err != nil {
		return err
	}
	if !sc.All && !sc.Admin {
		return AdminRequired()
	}
	if err := CheckTenant(t); err != nil {
		return err
	}
	if err := CheckQuotas(t.Quotas); err != nil {
		return err
	}
	for i := range keys {
		if keys[i].TenantID != t.ID {
			return errdefs.Invalid("invalid_key", "a new tenant's keys must belong to it")
		}
		if err := CheckKey(&keys[i]); err != nil {
			return err
		}
		if err := CheckKeyCreator(ctx, &keys[i]); err != nil {
			return err
		}
	}
	return nil
}

// PrepareKey readies CreateKey's key: in the caller's tenant (the
// system's may name any), made by the caller's key.
func PrepareKey(ctx context.Context, k *Key) error {
	sc, err := ScopeOf(ctx)
	if err != nil {
		return err
	}
	if k.TenantID == "" {
		k.TenantID = sc.TenantID
	}
	if !sc.Sees(k.TenantID) {
		return errdefs.Forbidden("wrong_tenant", "a key can only be created in the caller's tenant")
	}
	if err := CheckKey(k); err != nil {
		return err
	}
	return CheckKeyCreator(ctx, k)
}

// KeysDeleted checks that the caller of ctx may delete every key of
// doomed (each with its ID and Role) and returns their IDs and how many
// of them are admin keys.
func KeysDeleted(ctx context.Context, doomed []Key) (deleted []string, admins int, err error) {
	deleted = make([]string, 0, len(doomed))
	for _, k := range doomed {
		if err := CheckKeyDelete(ctx, k.Role); err != nil {
			return nil, 0, err
		}
		if k.Role == api.RoleAdmin {
			admins++
		}
		deleted = append(deleted, k.ID)
	}
	return deleted, admins, nil
}

// PrepareSandbox readies CreateSandbox's record: in the caller's tenant
// (the system must name it), with an ID.
func PrepareSandbox(ctx context.Context, sb *Sandbox) error {
	sc, err := ScopeOf(ctx)
	if err != nil {
		return err
	}
	if !sc.All || sb.TenantID == "" {
		sb.TenantID = sc.TenantID
	}
	if sb.ID == "" {
		sb.ID = ids.New()
	}
	return CheckSandbox(sb)
}

// UpdatedSandbox readies what UpdateSandbox's fn made of before: its ID,
// tenant, creation and measured disk kept, UpdatedAt now.
func UpdatedSandbox(before, sb *Sandbox) error {
	sb.ID, sb.TenantID, sb.CreatedAt, sb.DiskBytes = before.ID, before.TenantID, before.CreatedAt, before.DiskBytes
	sb.UpdatedAt = time.Now()
	return CheckSandbox(sb)
}

// PrepareSecret readies CreateSecret's secret: in the principal's tenant
// (the system may name one), with an ID.
func PrepareSecret(ctx context.Context, sec *Secret) error {
	sc, err := ScopeOf(ctx)
	if err != nil {
		return err
	}
	if !sc.All || sec.TenantID == "" {
		if _, err := NamedScope(ctx, "secrets"); err != nil {
			return err
		}
		sec.TenantID = sc.TenantID
	}
	if sec.ID == "" {
		sec.ID = ids.New()
	}
	return CheckSecret(sec)
}

// UpdatedSecret readies what UpdateSecret's fn made of before: what a
// secret is set at its creation kept, UpdatedAt now.
func UpdatedSecret(before, sec *Secret) error {
	sec.ID, sec.TenantID, sec.Name, sec.CreatedAt = before.ID, before.TenantID, before.Name, before.CreatedAt
	sec.Kind, sec.Registry = before.Kind, before.Registry
	sec.UpdatedAt = time.Now()
	return CheckSecret(sec)
}

// PrepareTemplate readies CreateTemplate's template: in the principal's
// tenant, with an ID.
func PrepareTemplate(ctx context.Context, t *Template) error {
	sc, err := NamedScope(ctx, "templates")
	if err != nil {
		return err
	}
	t.TenantID = sc.TenantID
	if t.ID == "" {
		t.ID = ids.New()
	}
	return CheckTemplate(t)
}

// PrepareVolume readies CreateVolume's volume: in the principal's
// tenant, with an ID.
func PrepareVolume(ctx context.Context, v *Volume) error {
	sc, err := NamedScope(ctx, "volumes")
	if err != nil {
		return err
	}
	v.TenantID = sc.TenantID
	if v.ID == "" {
		v.ID = ids.New()
	}
	return CheckVolume(v)
}

// PrepareSnapshot readies CreateSnapshot's snapshot: in the caller's
// tenant (the system must name one), with an ID.
func PrepareSnapshot(ctx context.Context, snap *Snapshot) error {
	sc, err := ScopeOf(ctx)
	if err != nil {
		return err
	}
	if !sc.All || snap.TenantID == "" {
		if sc.TenantID == "" {
			return SystemOnly()
		}
		snap.TenantID = sc.TenantID
	}
	if snap.ID == "" {
		snap.ID = ids.New()
	}
	return CheckSnapshot(snap)
}

// PrepareApp readies CreateApp's app: in the caller's tenant (the system
// may name one, and must), with an ID, its times now.
func PrepareApp(ctx context.Context, a *App) error {
	sc, err := ScopeOf(ctx)
	if err != nil {
		return err
	}
	if !sc.All || a.TenantID == "" {
		a.TenantID = sc.TenantID
	}
	if a.TenantID == "" {
		return errdefs.Forbidden("no_tenant", "an app needs a tenant")
	}
	if a.ID == "" {
		a.ID = ids.New()
	}
	if err := CheckAppName(a.Name); err != nil {
		return err
	}
	a.CreatedAt = Time(time.Now())
	a.UpdatedAt = a.CreatedAt
	return nil
}

// UpdatedApp readies what UpdateApp's fn made of before: its ID, tenant,
// name and creation kept, Generation one more when a pointer moved,
// UpdatedAt now.
func UpdatedApp(before, a *App) {
	a.ID, a.TenantID, a.Name, a.CreatedAt = before.ID, before.TenantID, before.Name, before.CreatedAt
	a.Generation = before.Generation
	if a.Live != before.Live || a.Dev != before.Dev || a.PreviousLive != before.PreviousLive {
		a.Generation++
	}
	a.UpdatedAt = Time(time.Now())
}
