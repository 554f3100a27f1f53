-- Runs in flight keep what they saw: their per-record rows become one row per entity.
INSERT INTO "sync_seen_pages" ("sync_job_id", "entity", "x_ids") SELECT "sync_job_id", "entity", array_agg("x_id") FROM "sync_seen" GROUP BY "sync_job_id", "entity";--> statement-breakpoint
DROP TABLE "sync_seen" CASCADE;
