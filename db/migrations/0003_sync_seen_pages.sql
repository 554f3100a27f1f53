CREATE TABLE "sync_seen_pages" (
	"sync_job_id" text NOT NULL,
	"entity" text NOT NULL,
	"x_ids" text[] NOT NULL
);
--> statement-breakpoint
CREATE INDEX "sync_seen_pages_job_idx" ON "sync_seen_pages" USING btree ("sync_job_id","entity");