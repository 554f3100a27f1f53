CREATE EXTENSION IF NOT EXISTS pg_trgm;
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"key_hash" text NOT NULL,
	"key_prefix" text NOT NULL,
	"scopes" text[] NOT NULL,
	"revoked_at" timestamp (3) with time zone,
	"last_used_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"integration_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"type" text NOT NULL,
	"category" text NOT NULL,
	"data" jsonb NOT NULL,
	"sync_job_id" text,
	"operation_id" text,
	"record_id" text,
	"dispatched_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "integrations" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"name" text,
	"mode" text NOT NULL,
	"plan" text NOT NULL,
	"source_type" text NOT NULL,
	"source_config" jsonb NOT NULL,
	"sync_interval_seconds" integer,
	"first_sync_completed_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "lease_residents" (
	"lease_id" text NOT NULL,
	"resident_id" text NOT NULL,
	"x_id" text NOT NULL,
	"role" text NOT NULL,
	"position" integer NOT NULL,
	CONSTRAINT "lease_residents_lease_id_resident_id_pk" PRIMARY KEY("lease_id","resident_id")
);
--> statement-breakpoint
CREATE TABLE "leases" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"integration_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"x_id" text NOT NULL,
	"custom_data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"content_hash" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"deleted_at" timestamp (3) with time zone,
	"ps_synced_at" timestamp (3) with time zone,
	"property_id" text,
	"unit_id" text,
	"status" text,
	"type" text,
	"start_date" date,
	"end_date" date,
	"move_in_date" date,
	"move_out_date" date,
	"notice_date" date,
	"signed_date" date,
	"rent_amount" bigint NOT NULL,
	"rent_currency" text NOT NULL,
	"security_deposit_amount" bigint,
	"security_deposit_currency" text,
	"balance_amount" bigint,
	"balance_currency" text,
	"term_months" integer,
	"renewal_status" text,
	"is_renewal" boolean,
	"previous_lease_id" text,
	"concessions" text,
	"notes" text
);
--> statement-breakpoint
CREATE TABLE "organizations" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"rate_limit_per_minute" integer,
	"rate_limit_burst" integer,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "properties" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"integration_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"x_id" text NOT NULL,
	"custom_data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"content_hash" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"deleted_at" timestamp (3) with time zone,
	"ps_synced_at" timestamp (3) with time zone,
	"name" text,
	"type" text,
	"status" text,
	"address" jsonb,
	"description" text,
	"year_built" integer,
	"total_units" integer,
	"total_buildings" integer,
	"total_floors" integer,
	"website_url" text,
	"email" text,
	"phones" jsonb,
	"latitude" double precision,
	"longitude" double precision,
	"timezone_id" text,
	"management_company_name" text,
	"tax_id" text,
	"pet_policy" text,
	"smoking_policy" text,
	"media" jsonb
);
--> statement-breakpoint
CREATE TABLE "rate_limit_buckets" (
	"organization_id" uuid PRIMARY KEY NOT NULL,
	"tokens" double precision NOT NULL,
	"refilled_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "residents" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"integration_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"x_id" text NOT NULL,
	"custom_data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"content_hash" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"deleted_at" timestamp (3) with time zone,
	"ps_synced_at" timestamp (3) with time zone,
	"property_id" text,
	"first_name" text,
	"middle_name" text,
	"last_name" text,
	"email" text,
	"phones" jsonb,
	"date_of_birth" date,
	"address" jsonb,
	"status" text
);
--> statement-breakpoint
CREATE TABLE "sync_jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"integration_id" uuid NOT NULL,
	"status" text NOT NULL,
	"trigger" text NOT NULL,
	"workflow_id" text,
	"initial" boolean DEFAULT false NOT NULL,
	"started_at" timestamp (3) with time zone,
	"finished_at" timestamp (3) with time zone,
	"records_seen" integer DEFAULT 0 NOT NULL,
	"records_new" integer DEFAULT 0 NOT NULL,
	"records_updated" integer DEFAULT 0 NOT NULL,
	"records_soft_deleted" integer DEFAULT 0 NOT NULL,
	"progress" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"error" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sync_seen" (
	"sync_job_id" text NOT NULL,
	"entity" text NOT NULL,
	"x_id" text NOT NULL,
	CONSTRAINT "sync_seen_sync_job_id_entity_x_id_pk" PRIMARY KEY("sync_job_id","entity","x_id")
);
--> statement-breakpoint
CREATE TABLE "units" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"integration_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"x_id" text NOT NULL,
	"custom_data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"content_hash" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"deleted_at" timestamp (3) with time zone,
	"ps_synced_at" timestamp (3) with time zone,
	"property_id" text,
	"unit_number" text,
	"floorplan_name" text,
	"bedrooms" integer,
	"bathrooms" integer,
	"square_feet" integer,
	"max_occupants" integer,
	"market_rent_amount" bigint,
	"market_rent_currency" text,
	"status" text,
	"note" text,
	"address" jsonb
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "integrations" ADD CONSTRAINT "integrations_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_hash_idx" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_org_idx" ON "api_keys" USING btree ("organization_id");--> statement-breakpoint
CREATE INDEX "events_integration_created_idx" ON "events" USING btree ("integration_id","created_at","id");--> statement-breakpoint
CREATE INDEX "events_undispatched_idx" ON "events" USING btree ("created_at") WHERE "events"."dispatched_at" is null;--> statement-breakpoint
CREATE UNIQUE INDEX "events_sync_lifecycle_idx" ON "events" USING btree ("sync_job_id","type") WHERE "events"."category" = 'sync_lifecycle';--> statement-breakpoint
CREATE INDEX "integrations_org_idx" ON "integrations" USING btree ("organization_id","mode");--> statement-breakpoint
CREATE INDEX "lease_residents_resident_idx" ON "lease_residents" USING btree ("resident_id");--> statement-breakpoint
CREATE UNIQUE INDEX "leases_integration_x_id_idx" ON "leases" USING btree ("integration_id","x_id");--> statement-breakpoint
CREATE INDEX "leases_org_created_idx" ON "leases" USING btree ("organization_id","mode","created_at","id");--> statement-breakpoint
CREATE INDEX "leases_org_updated_idx" ON "leases" USING btree ("organization_id","mode","updated_at","id");--> statement-breakpoint
CREATE INDEX "leases_org_x_id_idx" ON "leases" USING btree ("organization_id","mode","x_id");--> statement-breakpoint
CREATE INDEX "leases_property_idx" ON "leases" USING btree ("property_id","created_at");--> statement-breakpoint
CREATE INDEX "leases_unit_idx" ON "leases" USING btree ("unit_id","created_at");--> statement-breakpoint
CREATE INDEX "leases_org_status_updated_idx" ON "leases" USING btree ("organization_id","mode","status","updated_at","id");--> statement-breakpoint
CREATE INDEX "leases_org_status_created_idx" ON "leases" USING btree ("organization_id","mode","status","created_at","id");--> statement-breakpoint
CREATE INDEX "leases_org_type_idx" ON "leases" USING btree ("organization_id","mode","type","created_at");--> statement-breakpoint
CREATE INDEX "leases_org_start_idx" ON "leases" USING btree ("organization_id","mode","start_date","id");--> statement-breakpoint
CREATE INDEX "leases_org_end_idx" ON "leases" USING btree ("organization_id","mode","end_date","id");--> statement-breakpoint
CREATE UNIQUE INDEX "properties_integration_x_id_idx" ON "properties" USING btree ("integration_id","x_id");--> statement-breakpoint
CREATE INDEX "properties_org_created_idx" ON "properties" USING btree ("organization_id","mode","created_at","id");--> statement-breakpoint
CREATE INDEX "properties_org_updated_idx" ON "properties" USING btree ("organization_id","mode","updated_at","id");--> statement-breakpoint
CREATE INDEX "properties_org_x_id_idx" ON "properties" USING btree ("organization_id","mode","x_id");--> statement-breakpoint
CREATE INDEX "properties_org_name_idx" ON "properties" USING btree ("organization_id","mode","name","id");--> statement-breakpoint
CREATE INDEX "properties_org_status_idx" ON "properties" USING btree ("organization_id","mode","status","created_at");--> statement-breakpoint
CREATE INDEX "properties_org_type_idx" ON "properties" USING btree ("organization_id","mode","type","created_at");--> statement-breakpoint
CREATE INDEX "properties_name_trgm_idx" ON "properties" USING gin ("name" gin_trgm_ops);--> statement-breakpoint
CREATE UNIQUE INDEX "residents_integration_x_id_idx" ON "residents" USING btree ("integration_id","x_id");--> statement-breakpoint
CREATE INDEX "residents_org_created_idx" ON "residents" USING btree ("organization_id","mode","created_at","id");--> statement-breakpoint
CREATE INDEX "residents_org_updated_idx" ON "residents" USING btree ("organization_id","mode","updated_at","id");--> statement-breakpoint
CREATE INDEX "residents_org_x_id_idx" ON "residents" USING btree ("organization_id","mode","x_id");--> statement-breakpoint
CREATE INDEX "residents_property_idx" ON "residents" USING btree ("property_id","created_at");--> statement-breakpoint
CREATE INDEX "residents_org_status_idx" ON "residents" USING btree ("organization_id","mode","status","created_at");--> statement-breakpoint
CREATE INDEX "residents_org_email_idx" ON "residents" USING btree ("organization_id","mode",lower("email"));--> statement-breakpoint
CREATE INDEX "residents_org_last_name_idx" ON "residents" USING btree ("organization_id","mode","last_name","id");--> statement-breakpoint
CREATE INDEX "sync_jobs_integration_idx" ON "sync_jobs" USING btree ("integration_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "units_integration_x_id_idx" ON "units" USING btree ("integration_id","x_id");--> statement-breakpoint
CREATE INDEX "units_org_created_idx" ON "units" USING btree ("organization_id","mode","created_at","id");--> statement-breakpoint
CREATE INDEX "units_org_updated_idx" ON "units" USING btree ("organization_id","mode","updated_at","id");--> statement-breakpoint
CREATE INDEX "units_org_x_id_idx" ON "units" USING btree ("organization_id","mode","x_id");--> statement-breakpoint
CREATE INDEX "units_property_idx" ON "units" USING btree ("property_id","created_at");--> statement-breakpoint
CREATE INDEX "units_org_status_idx" ON "units" USING btree ("organization_id","mode","status","created_at");--> statement-breakpoint
CREATE INDEX "units_org_unit_number_idx" ON "units" USING btree ("organization_id","mode","unit_number","id");