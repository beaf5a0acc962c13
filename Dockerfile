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
# iproute2: links, addresses, routes, rules; iptables/nftables: KILO-* chains; wireguard-tools: wg;
# wireguard-go: WireGuard where the kernel has none; containernetworking-plugins: the CNI plugins
# the install-cni init container copies to the host (bridge, host-local, portmap, loopback).
RUN apt-get update \
  && apt-get install -y --no-install-recommends \
    iproute2 iptables nftables wireguard-tools wireguard-go containernetworking-plugins ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
ENTRYPOINT ["/app/bin/kg"]
