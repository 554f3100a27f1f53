DROP INDEX "leases_org_created_idx";--> statement-breakpoint
DROP INDEX "leases_org_status_created_idx";--> statement-breakpoint
DROP INDEX "properties_org_created_idx";--> statement-breakpoint
DROP INDEX "residents_org_created_idx";--> statement-breakpoint
DROP INDEX "units_org_created_idx";--> statement-breakpoint
CREATE INDEX "leases_org_created_idx" ON "leases" USING btree ("organization_id","mode","created_at","id","updated_at");--> statement-breakpoint
CREATE INDEX "leases_org_status_created_idx" ON "leases" USING btree ("organization_id","mode","status","created_at","id","updated_at");--> statement-breakpoint
CREATE INDEX "properties_org_created_idx" ON "properties" USING btree ("organization_id","mode","created_at","id","updated_at");--> statement-breakpoint
CREATE INDEX "residents_org_created_idx" ON "residents" USING btree ("organization_id","mode","created_at","id","updated_at");--> statement-breakpoint
CREATE INDEX "units_org_created_idx" ON "units" USING btree ("organization_id","mode","created_at","id","updated_at");