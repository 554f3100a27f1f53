CREATE TABLE "webhook_dispatch_cursors" (
	"subscription_id" text PRIMARY KEY NOT NULL,
	"taken_seq" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
-- Each queue's cursor: everything before its first delivery not yet taken (all of it when there is none). A taken
-- delivery still pending beyond that (only when claims raced) is sent again as a first attempt: at-least-once.
INSERT INTO "webhook_dispatch_cursors" ("subscription_id", "taken_seq")
SELECT "subscription_id", coalesce(min("seq") FILTER (WHERE "status" = 'pending' AND "first_started_at" IS NULL) - 1, max("seq"))
FROM "webhook_deliveries" WHERE "seq" IS NOT NULL GROUP BY "subscription_id";--> statement-breakpoint
ALTER TABLE "webhook_deliveries" DROP COLUMN "first_started_at";
