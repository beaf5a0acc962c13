# kilo-ts image: `kg` (agent and `kg webhook`) and `kgctl`, with the tools kg drives.
#   docker build -t ghcr.io/kilo-ts/kilo-ts:0.1.0 .
# The manifests in manifests/ use this image name.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
# The tools kg drives (and the CNI plugins install-cni copies to the host): system-packages.txt says which and why.
COPY system-packages.txt ./
COPY scripts/system-packages.sh ./scripts/
RUN apt-get update \
  && apt-get install -y --no-install-recommends $(scripts/system-packages.sh runtime image) \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
ENTRYPOINT ["/app/bin/kg"]
