CREATE TABLE "idempotency_keys" (
	"organization_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"operation_id" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "idempotency_keys_organization_id_mode_key_pk" PRIMARY KEY("organization_id","mode","key")
);
--> statement-breakpoint
CREATE TABLE "operations" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"integration_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"type" text NOT NULL,
	"status" text NOT NULL,
	"request" jsonb NOT NULL,
	"target_id" text,
	"target_x_id" text,
	"source_state" text,
	"applied_at" timestamp (3) with time zone,
	"reconcile_state" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp (3) with time zone,
	"last_error" text,
	"resource_id" text,
	"resource_x_id" text,
	"idempotency_key" text,
	"workflow_started_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "operations_org_created_idx" ON "operations" USING btree ("organization_id","mode","created_at");--> statement-breakpoint
CREATE INDEX "operations_unstarted_idx" ON "operations" USING btree ("created_at") WHERE "operations"."workflow_started_at" is null;