ALTER TABLE "units" ADD COLUMN "floorplan_id" text;--> statement-breakpoint
-- The connector used to leave a unit's floorplanId in custom_data; it now maps it to floorplan_id. Moving the stored
-- values the same way (0 names no floor plan) makes the next sync find the same content under a new hash: it rehashes
-- the rows without recording UNIT_UPDATED events for every unit.
UPDATE "units" SET
  "floorplan_id" = nullif(nullif(btrim("custom_data"->>'floorplanId'), ''), '0'),
  "custom_data" = "custom_data" - 'floorplanId'
WHERE "custom_data" ? 'floorplanId';
