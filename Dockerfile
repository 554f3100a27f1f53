# One image for the API, the worker, the sandbox PMS, migrations and the CLI; the command picks the role.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# Two malloc arenas instead of one per thread: the worker's many threads otherwise hold on to freed memory.
ENV MALLOC_ARENA_MAX=2
COPY package.json package-lock.json ./
# patches/ must be in place before the install: its postinstall applies them (patch-package).
COPY patches ./patches
RUN npm install --omit=dev --no-audit --no-fund
COPY . .
USER node
EXPOSE 3000
CMD ["node", "--import", "tsx", "api/main.ts"]
