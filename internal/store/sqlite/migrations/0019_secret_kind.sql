-- 0019: what a secret may be used for. kind is 'env' (a value the server
-- uses toward a destination the operator configured, such as a provider
-- key) or 'registry' (a registry password, sent only to the host in
-- registry). Both are set when the secret is created and never change.
-- Every secret stored before was made as an 'env' one: a registry secret
-- must be created anew, bound to its host.

ALTER TABLE secrets ADD COLUMN kind TEXT NOT NULL DEFAULT 'env';
ALTER TABLE secrets ADD COLUMN registry TEXT NOT NULL DEFAULT '';
