# One image for the API, the worker, the sandbox PMS, migrations and the CLI: compiled JavaScript run by plain
# `node`, no tsx and no webpack at start-up. The command picks the role (docker-compose.yml): dist/api.mjs (the
# default), dist/worker.mjs, dist/sandbox.mjs, dist/migrate.mjs, dist/cli.mjs.
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

# Build stage: every dependency, then `npm run build` (dist/: one bundle per process, the workflow bundle, the migrations).
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# patches/ must be in place before the install: its postinstall applies them (patch-package).
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# Final stage: production dependencies only and the build's dist/ (the bundles keep every package external).
FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
# Two malloc arenas instead of one per thread: the worker's many threads otherwise hold on to freed memory.
ENV MALLOC_ARENA_MAX=2
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# Automations with a directory destination write under EXPORT_ROOT (.data/exports): owned by the unprivileged user
# (docker-compose.yml mounts a volume there, which takes this ownership).
RUN mkdir -p .data/exports && chown -R node:node .data
USER node
EXPOSE 3000
CMD ["node", "dist/api.mjs"]
