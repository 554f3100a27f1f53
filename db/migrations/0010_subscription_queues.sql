ALTER TABLE "webhook_subscriptions" ADD COLUMN "dispatch_idle" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "max_in_flight" integer;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "circuit_opened_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "circuit_next_probe_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_queue_idx" ON "webhook_deliveries" USING btree ("subscription_id","seq") WHERE "webhook_deliveries"."status" = 'pending';