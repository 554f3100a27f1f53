CREATE TABLE "console_sessions" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"csrf_token" text NOT NULL,
	"admin_token_hash" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "console_sessions_expires_idx" ON "console_sessions" USING btree ("expires_at");