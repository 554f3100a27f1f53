-- What sync runs failed as abandoned (their workflow terminated) saw: kept until now, read by nothing.
DELETE FROM "sync_seen_pages" WHERE "sync_job_id" NOT IN (SELECT "id" FROM "sync_jobs" WHERE "status" = 'running');
