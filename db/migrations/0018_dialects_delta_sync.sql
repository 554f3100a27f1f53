ALTER TABLE "integrations" ADD COLUMN "full_sync_interval_seconds" integer;--> statement-breakpoint
ALTER TABLE "integrations" ADD COLUMN "last_full_sync_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "integrations" ADD COLUMN "synced_through" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "sync_jobs" ADD COLUMN "kind" text DEFAULT 'full' NOT NULL;--> statement-breakpoint
ALTER TABLE "sync_jobs" ADD COLUMN "window_from" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "sync_jobs" ADD COLUMN "window_to" timestamp (3) with time zone;