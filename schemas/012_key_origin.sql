-- Hone controller store, migration 012 (issue 26): keys remember what made them, users can be
-- disabled, and user names are unique whatever their case.
--
-- created_by: the user who minted the key ('admin' for the admin key); parent_key: the key it was
-- minted with (presented itself, or the key an admin's token came from), NULL when the admin key
-- made it; admin_key: the SHA-256 of the admin key at the root of its chain (minted with the admin
-- key, directly or through a token or key made from it), NULL otherwise. Revoking a key revokes
-- every key below it (store_key_revoke walks parent_key). Changing auth.admin_key ends the keys
-- of admin users whose admin_key is not the new key's (admin power made with the old key), as
-- migration 011 does for tokens; plain users' keys live on (auth.c says why). Keys made before
-- this migration have none of the three: their origin is unknown, they live until revoked.
ALTER TABLE api_keys ADD COLUMN created_by TEXT;
ALTER TABLE api_keys ADD COLUMN parent_key TEXT;
ALTER TABLE api_keys ADD COLUMN admin_key TEXT;
CREATE INDEX api_keys_by_parent ON api_keys (parent_key);
CREATE INDEX tokens_by_user ON tokens (user_id);

-- When an admin disabled the user (NULL: enabled). A disabled user's keys and tokens are refused
-- while it is; its rows stay; enabling it deletes the tokens from before (keys work again).
ALTER TABLE users ADD COLUMN disabled REAL;

-- Names differing only in case ("alice", "Alice") look like one user: unique now, ignoring ASCII
-- case. A store that already holds such names keeps the oldest as it is and renames the others to
-- "<name>~<id>" (users log in with keys, never by name), so that the upgrade cannot fail.
UPDATE users SET name = name || '~' || id
WHERE EXISTS (SELECT 1 FROM users o WHERE o.name = users.name COLLATE NOCASE AND o.id != users.id
              AND (o.created < users.created OR (o.created = users.created AND o.id < users.id)));
CREATE UNIQUE INDEX users_by_name_nocase ON users (name COLLATE NOCASE);
