-- Door tokens (issue 35): an API token with scope 'door' may only check
-- people in at the door (and read the roster), whatever its account's
-- role; '' is a token with its account's full role, as every token
-- made before.
ALTER TABLE api_tokens ADD COLUMN scope text NOT NULL DEFAULT '';
