-- 0002: every control plane on the database is told what changes
-- (store.Notifier, changes.go). A trigger NOTIFYs channel hutch_changes
-- in the transaction of the write, so a change is told only if it
-- commits, in commit order, and the same NOTIFY twice in one transaction
-- is told once. The payload is a small JSON object, far below
-- Postgres's 8000 bytes: kind (store.ChangeKind) and the ids that kind
-- names. A reader ignores a kind or a field it does not know, so a newer
-- binary may tell more.
CREATE FUNCTION notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    CASE TG_TABLE_NAME
    WHEN 'api_keys' THEN
        PERFORM pg_notify('hutch_changes', json_build_object('kind', 'key', 'tenant', OLD.tenant_id, 'key', OLD.id)::text);
    WHEN 'tenants' THEN
        PERFORM pg_notify('hutch_changes', json_build_object('kind', 'tenant', 'tenant', NEW.id)::text);
    WHEN 'sandboxes' THEN
        IF TG_OP = 'DELETE' THEN
            PERFORM pg_notify('hutch_changes', json_build_object('kind', 'sandbox', 'tenant', OLD.tenant_id, 'sandbox', OLD.id, 'rev', 0)::text);
        ELSE
            PERFORM pg_notify('hutch_changes', json_build_object('kind', 'sandbox', 'tenant', NEW.tenant_id, 'sandbox', NEW.id, 'rev', NEW.rev)::text);
        END IF;
    WHEN 'events' THEN
        PERFORM pg_notify('hutch_changes', json_build_object('kind', 'events', 'tenant', NEW.tenant_id)::text);
    END CASE;
    RETURN NULL;
END
$$;

-- A key is revoked by deleting it (its tenant's row going takes its keys
-- with it, which tells them too); keys change otherwise only in
-- last_used_at, which nobody needs told.
CREATE TRIGGER api_keys_changed AFTER DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION notify_change();
-- The keys kept in memory hold their tenant's state; the rest of a
-- tenant's row (quotas, its deletion's record) is read where it is used.
CREATE TRIGGER tenants_changed AFTER UPDATE OF state ON tenants
    FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION notify_change();
-- Every write of a sandbox's record ends by giving it its revision
-- (nextRev), so an update of rev is every write, the create included.
CREATE TRIGGER sandboxes_changed AFTER UPDATE OF rev OR DELETE ON sandboxes
    FOR EACH ROW EXECUTE FUNCTION notify_change();
CREATE TRIGGER events_changed AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION notify_change();
