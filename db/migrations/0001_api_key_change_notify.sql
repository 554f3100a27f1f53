-- Every API process caches authenticated keys and LISTENs on this channel to evict a key the moment it is revoked
-- or its scopes or mode change (api/middleware/auth.ts). The payload is the key's sha256, which is what the cache is keyed by.
CREATE OR REPLACE FUNCTION api_keys_notify_change() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('api_keys_changed', COALESCE(NEW.key_hash, OLD.key_hash));
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER api_keys_notify_update
  AFTER UPDATE OF revoked_at, scopes, mode, key_hash ON api_keys
  FOR EACH ROW
  WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.scopes IS DISTINCT FROM NEW.scopes
        OR OLD.mode IS DISTINCT FROM NEW.mode OR OLD.key_hash IS DISTINCT FROM NEW.key_hash)
  EXECUTE FUNCTION api_keys_notify_change();
--> statement-breakpoint
CREATE TRIGGER api_keys_notify_delete
  AFTER DELETE ON api_keys
  FOR EACH ROW
  EXECUTE FUNCTION api_keys_notify_change();
