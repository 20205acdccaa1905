-- 0010: each tenant's quotas, as an admin set them. NULL follows the
-- server's default (hutch serve --tenant-*); 0 is no limit. disk_mb is
-- recorded only: it is not enforced until sandboxes have disk quotas.

ALTER TABLE tenants ADD COLUMN quota_sandboxes INTEGER CHECK (quota_sandboxes >= 0);
ALTER TABLE tenants ADD COLUMN quota_memory_mb INTEGER CHECK (quota_memory_mb >= 0);
ALTER TABLE tenants ADD COLUMN quota_cpu REAL CHECK (quota_cpu >= 0);
ALTER TABLE tenants ADD COLUMN quota_pids INTEGER CHECK (quota_pids >= 0);
ALTER TABLE tenants ADD COLUMN quota_disk_mb INTEGER CHECK (quota_disk_mb >= 0);
