CREATE TABLE "sync_skipped_records" (
	"sync_job_id" text NOT NULL,
	"entity" text NOT NULL,
	"x_id" text,
	"reason" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sync_jobs" ADD COLUMN "records_skipped" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "sync_skipped_records_key" ON "sync_skipped_records" USING btree ("sync_job_id","entity","x_id");