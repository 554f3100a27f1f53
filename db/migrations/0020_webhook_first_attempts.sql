-- A first attempt that succeeded is recorded on its delivery alone (no webhook_attempts row); deliveries recorded
-- before keep their attempt rows, which readers show as they are.
ALTER TABLE "webhook_deliveries" ADD COLUMN "first_duration_ms" integer;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "first_response_status" integer;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "first_response_body" text;