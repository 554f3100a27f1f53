-- Fewer writes per webhook delivery. A first attempt that succeeded is recorded on its delivery alone (no
-- webhook_attempts row; deliveries recorded before keep their attempt rows, which readers show as they are). Four
-- indexes instead of eight: the queues and the open deliveries share one partial index (by status, subscription and
-- seq); the unique index on (subscription, seq) goes (the relay numbers under the subscription's row lock); lists in
-- time order, of one state or of all (merged state by state), come from the one by subscription, state, time and id,
-- which replaces the one by subscription and time; and the one on created_at goes (the retention's purge goes
-- subscription by subscription).
DROP INDEX "webhook_deliveries_subscription_idx";--> statement-breakpoint
DROP INDEX "webhook_deliveries_subscription_seq_idx";--> statement-breakpoint
DROP INDEX "webhook_deliveries_created_idx";--> statement-breakpoint
DROP INDEX "webhook_deliveries_queue_idx";--> statement-breakpoint
DROP INDEX "webhook_deliveries_subscription_status_idx";--> statement-breakpoint
DROP INDEX "webhook_deliveries_open_idx";--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "first_duration_ms" integer;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "first_response_status" integer;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "first_response_body" text;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_subscription_status_idx" ON "webhook_deliveries" USING btree ("subscription_id","status","created_at","id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_open_idx" ON "webhook_deliveries" USING btree ("status","subscription_id","seq") WHERE "webhook_deliveries"."status" in ('pending', 'retrying', 'dead_lettered');