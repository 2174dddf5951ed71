-- Hone controller store, migration 011: which admin key a login token was made from (the SHA-256
-- of that key), so that changing auth.admin_key ends them, as revoking an API key ends its own.
-- NULL for tokens made from API keys (key_id says which). Tokens made from the admin key before
-- this migration, or with no auth configured, have neither and are no longer good: their owners
-- log in again.
ALTER TABLE tokens ADD COLUMN admin_key TEXT;
