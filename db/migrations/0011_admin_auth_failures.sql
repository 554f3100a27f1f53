CREATE TABLE "admin_auth_failures" (
	"key" text PRIMARY KEY NOT NULL,
	"failures" integer NOT NULL,
	"last_failed_at" timestamp (3) with time zone NOT NULL,
	"blocked_until" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE INDEX "admin_auth_failures_last_failed_idx" ON "admin_auth_failures" USING btree ("last_failed_at");