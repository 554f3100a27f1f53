ALTER TABLE "sync_jobs" ADD COLUMN "attempt" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "sync_jobs" ADD COLUMN "last_error" text;--> statement-breakpoint
ALTER TABLE "sync_jobs" ADD COLUMN "next_attempt_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE INDEX "operations_open_idx" ON "operations" USING btree ("created_at") WHERE "operations"."status" in ('queued', 'running');--> statement-breakpoint
CREATE INDEX "sync_jobs_retrying_idx" ON "sync_jobs" USING btree ("next_attempt_at") WHERE "sync_jobs"."status" = 'running' and "sync_jobs"."attempt" > 1;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_open_idx" ON "webhook_deliveries" USING btree ("status","subscription_id") WHERE "webhook_deliveries"."status" in ('pending', 'retrying', 'dead_lettered');