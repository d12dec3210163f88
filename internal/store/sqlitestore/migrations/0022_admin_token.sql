-- The admin token printed at first start belongs to the first owner of
-- every site once there is one (account_id), so it stops working while
-- that account is disabled; it can be revoked (revoked_at) and stays
-- revoked across restarts until formd token makes a new one.
ALTER TABLE tokens ADD COLUMN account_id TEXT REFERENCES accounts(id);
ALTER TABLE tokens ADD COLUMN revoked_at INTEGER;
UPDATE tokens SET account_id = (SELECT id FROM accounts WHERE role = 'owner' AND sites = '["*"]' ORDER BY created_at, id LIMIT 1)
	WHERE name = 'admin';

-- Who made an API token, when it was not the account itself (an owner
-- making one for another account): the audit log names them beside the
-- account on every use. '' for tokens made before this column.
ALTER TABLE api_tokens ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
