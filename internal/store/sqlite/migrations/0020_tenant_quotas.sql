-- 0020: a tenant's quotas on what it holds besides sandboxes, as an admin
-- set them (NULL follows the server's default, hutch serve --tenant-*; 0
-- is no limit).

ALTER TABLE tenants ADD COLUMN quota_snapshots INTEGER CHECK (quota_snapshots >= 0);
ALTER TABLE tenants ADD COLUMN quota_snapshots_mb INTEGER CHECK (quota_snapshots_mb >= 0);
ALTER TABLE tenants ADD COLUMN quota_volumes INTEGER CHECK (quota_volumes >= 0);
ALTER TABLE tenants ADD COLUMN quota_volumes_mb INTEGER CHECK (quota_volumes_mb >= 0);
ALTER TABLE tenants ADD COLUMN quota_templates INTEGER CHECK (quota_templates >= 0);
ALTER TABLE tenants ADD COLUMN quota_templates_mb INTEGER CHECK (quota_templates_mb >= 0);
ALTER TABLE tenants ADD COLUMN quota_apps INTEGER CHECK (quota_apps >= 0);
ALTER TABLE tenants ADD COLUMN quota_keys INTEGER CHECK (quota_keys >= 0);
ALTER TABLE tenants ADD COLUMN quota_secrets INTEGER CHECK (quota_secrets >= 0);
ALTER TABLE tenants ADD COLUMN quota_watches INTEGER CHECK (quota_watches >= 0);
ALTER TABLE tenants ADD COLUMN quota_streams INTEGER CHECK (quota_streams >= 0);
