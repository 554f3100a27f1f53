/**
 * The single source of truth for tables, by area in db/schema/. Migrations in db/migrations are generated from this
 * file (`npm run db:generate`, drizzle.config.ts) and committed. Everything reads tables from here.
 */
export * from './schema/tenants';
export * from './schema/records';
export * from './schema/sync';
export * from './schema/events';
export * from './schema/webhooks';
export * from './schema/operations';
export * from './schema/automations';
export * from './schema/service';
