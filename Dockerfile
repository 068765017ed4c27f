# syntax=docker/dockerfile:1
# Switchyard's image: `docker build -t switchyard:0.1.0 .` at the repository root.
# Three stages: build (every dependency, tsc), deps (production dependencies only), runtime
# (those two results, a non-root user, no npm run at start). Checked by test/deploy/image.test.ts,
# and test/deploy/image-files.test.ts starts serve from the file tree these COPY lines make.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: nothing the build needs compiles anything natively.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# package.json sits beside dist/: `switchyard --version` reads it from there.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY examples ./examples
# The status page the admin listener serves at /: dist/server/status-page.js reads it from
# ../../static/status-page/, so static/ sits beside dist/ as in the npm package.
COPY static ./static
# The node image's "node" user, given by number so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080
# node is PID 1 and the gateway handles SIGTERM itself (drain, then exit 0): no init or shell needed.
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["serve", "--config", "/etc/switchyard/config/gateway.yaml"]
