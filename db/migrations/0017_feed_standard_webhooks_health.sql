CREATE TABLE "event_positions" (
	"name" text PRIMARY KEY NOT NULL,
	"last" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_subscription_health" (
	"subscription_id" text PRIMARY KEY NOT NULL,
	"last_success_at" timestamp (3) with time zone,
	"last_failure_at" timestamp (3) with time zone,
	"failing_since" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "position" bigint;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "standard_webhooks" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "disabled_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "disabled_by" text;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "disabled_reason" text;--> statement-breakpoint
CREATE UNIQUE INDEX "events_feed_idx" ON "events" USING btree ("organization_id","mode","position") WHERE "events"."position" is not null;--> statement-breakpoint
-- Events the relay took before positions existed are numbered in the order it took them (then as recorded).
UPDATE "events" e SET "position" = n.position FROM (
	SELECT "id", row_number() OVER (ORDER BY "dispatched_at", "created_at", "id") AS position FROM "events" WHERE "dispatched_at" IS NOT NULL
) n WHERE e."id" = n."id";--> statement-breakpoint
INSERT INTO "event_positions" ("name", "last") SELECT 'events', coalesce(max("position"), 0) FROM "events";--> statement-breakpoint
UPDATE "webhook_subscriptions" SET "disabled_at" = "updated_at", "disabled_by" = 'operator' WHERE "status" = 'disabled';
