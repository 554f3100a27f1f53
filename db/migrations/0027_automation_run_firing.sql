ALTER TABLE "automation_runs" ADD COLUMN "firing_id" text;--> statement-breakpoint
CREATE UNIQUE INDEX "automation_runs_firing_idx" ON "automation_runs" USING btree ("firing_id");