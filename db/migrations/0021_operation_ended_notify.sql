-- An Operation that ends (succeeded or failed) NOTIFYs `operation_ended` with its id, delivered when its transaction
-- commits: an API process holding a poll that asked to wait (`Prefer: wait=N`, api/operation-waits.ts) answers at
-- once instead of polling the row.
CREATE OR REPLACE FUNCTION operations_notify_ended() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('operation_ended', NEW.id);
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
--> statement-breakpoint
CREATE TRIGGER operations_notify_ended
  AFTER UPDATE OF status ON operations
  FOR EACH ROW
  WHEN (NEW.status IN ('succeeded', 'failed') AND OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION operations_notify_ended();
