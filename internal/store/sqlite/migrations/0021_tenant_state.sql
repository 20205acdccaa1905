-- 0021: a tenant's life: active, suspended, deleting, deleted
-- (api.TenantState). A tenant's row outlives its deletion as the record
-- of it: deletion holds api.TenantDeletion as JSON (who, when, how far,
-- what was removed).
--
-- Only an active tenant gets anything new: the triggers below refuse, in
-- the write that would add it, a key, sandbox, snapshot, template,
-- volume, secret or app of a tenant in any other state, and an event of
-- a deleted one. So a create that races a suspension or a deletion either
-- commits before it (and the suspension or deletion, listing after its
-- own write, finds what it made) or is refused. The store maps the
-- messages to 403 tenant_suspended and tenant_deleted.

ALTER TABLE tenants ADD COLUMN state TEXT NOT NULL DEFAULT 'active'
    CHECK (state IN ('active', 'suspended', 'deleting', 'deleted'));
ALTER TABLE tenants ADD COLUMN deletion TEXT CHECK (deletion IS NULL OR json_valid(deletion));

CREATE TRIGGER api_keys_tenant_active BEFORE INSERT ON api_keys
WHEN (SELECT state FROM tenants WHERE id = NEW.tenant_id) != 'active'
BEGIN
    SELECT RAISE(ABORT, 'tenant_suspended')
        WHERE (SELECT state FROM tenants WHERE id = NEW.tenant_id) = 'suspended';
    SELECT RAISE(ABORT, 'tenant_deleted');
END;

CREATE TRIGGER sandboxes_tenant_active BEFORE INSERT ON sandboxes
WHEN (SELECT state FROM tenants WHERE id = NEW.tenant_id) != 'active'
BEGIN
    SELECT RAISE(ABORT, 'tenant_suspended')
        WHERE (SELECT state FROM tenants WHERE id = NEW.tenant_id) = 'suspended';
    SELECT RAISE(ABORT, 'tenant_deleted');
END;

CREATE TRIGGER snapshots_tenant_active BEFORE INSERT ON snapshots
WHEN (SELECT state FROM tenants WHERE id = NEW.tenant_id) != 'active'
BEGIN
    SELECT RAISE(ABORT, 'tenant_suspended')
        WHERE (SELECT state FROM tenants WHERE id = NEW.tenant_id) = 'suspended';
    SELECT RAISE(ABORT, 'tenant_deleted');
END;

CREATE TRIGGER templates_tenant_active BEFORE INSERT ON templates
WHEN (SELECT state FROM tenants WHERE id = NEW.tenant_id) != 'active'
BEGIN
    SELECT RAISE(ABORT, 'tenant_suspended')
        WHERE (SELECT state FROM tenants WHERE id = NEW.tenant_id) = 'suspended';
    SELECT RAISE(ABORT, 'tenant_deleted');
END;

CREATE TRIGGER volumes_tenant_active BEFORE INSERT ON volumes
WHEN (SELECT state FROM tenants WHERE id = NEW.tenant_id) != 'active'
BEGIN
    SELECT RAISE(ABORT, 'tenant_suspended')
        WHERE (SELECT state FROM tenants WHERE id = NEW.tenant_id) = 'suspended';
    SELECT RAISE(ABORT, 'tenant_deleted');
END;

CREATE TRIGGER secrets_tenant_active BEFORE INSERT ON secrets
WHEN (SELECT state FROM tenants WHERE id = NEW.tenant_id) != 'active'
BEGIN
    SELECT RAISE(ABORT, 'tenant_suspended')
        WHERE (SELECT state FROM tenants WHERE id = NEW.tenant_id) = 'suspended';
    SELECT RAISE(ABORT, 'tenant_deleted');
END;

CREATE TRIGGER apps_tenant_active BEFORE INSERT ON apps
WHEN (SELECT state FROM tenants WHERE id = NEW.tenant_id) != 'active'
BEGIN
    SELECT RAISE(ABORT, 'tenant_suspended')
        WHERE (SELECT state FROM tenants WHERE id = NEW.tenant_id) = 'suspended';
    SELECT RAISE(ABORT, 'tenant_deleted');
END;

CREATE TRIGGER events_tenant_deleted BEFORE INSERT ON events
WHEN (SELECT state FROM tenants WHERE id = NEW.tenant_id) = 'deleted'
BEGIN
    SELECT RAISE(ABORT, 'tenant_deleted');
END;
