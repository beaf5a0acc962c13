# kilo-ts image: `kg` (agent and `kg webhook`) and `kgctl`, with the tools kg drives.
#   docker build -t ghcr.io/kilo-ts/kilo-ts:0.1.0 .
# plus --build-arg GIT_COMMIT=$(git rev-parse HEAD) for `kg --version` to name the commit.
# The manifests in manifests/ use this image name. `npm run image` builds it with buildah, also where
# the official base cannot be pulled (docs/image.md).
#
# BASE_IMAGE: any Debian bookworm with Node.js 20 on PATH (the official image's layout). The image
# itself is not built on it: it is a root filesystem of only what kg runs, taken from it (the
# `system` stage), with the bundle and the few packages the bundle leaves outside (docs/image.md).
ARG BASE_IMAGE=node:20-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# An npm configuration (registry, cafile=/run/secrets/npmca) may come in as the secrets `npmrc` and
# `npmca`; they stay out of every layer. --workspaces=false: not the lab's workspace package
# (packages/lab, which is not copied) nor the packages only it uses.
RUN --mount=type=secret,id=npmrc,target=/root/.npmrc --mount=type=secret,id=npmca,target=/run/secrets/npmca \
  npm ci --workspaces=false --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/build.mjs scripts/node-flags.mjs scripts/image-node-modules.mjs ./scripts/
# bin/kg's #! line names the V8 flags kg's code cache is trained under (scripts/build.mjs).
COPY bin ./bin
COPY src ./src
# The lab (packages/lab: a test API server and agents in network namespaces, `kg lab`) is the
# repository's demo, not part of the agent: it stays out of the bundle, and so of the image, where
# `kg lab` says so. Of node_modules, only what the bundle requires and does not carry.
RUN npm run build -- --without-lab && node scripts/image-node-modules.mjs dist node_modules /runtime/node_modules
# An image has no .git: `kg --version` reads the commit from here.
ARG GIT_COMMIT=unknown
RUN printf '{"commit":"%s"}\n' "$GIT_COMMIT" > dist/build-info.json

FROM ${BASE_IMAGE} AS system
# The tools kg drives (and the CNI plugins install-cni copies to the host): system-packages.txt says
# which and why. scripts/image-rootfs.sh copies them, the shell, node and their libraries to /rootfs.
COPY system-packages.txt ./
COPY scripts/system-packages.sh scripts/image-rootfs.sh ./scripts/
RUN apt-get update \
  && apt-get install -y --no-install-recommends $(scripts/system-packages.sh runtime image) \
  && scripts/image-rootfs.sh /rootfs "$(command -v node)"

FROM scratch
COPY --from=system /rootfs /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production
ARG GIT_COMMIT=unknown
LABEL org.opencontainers.image.title=kilo-ts org.opencontainers.image.revision=$GIT_COMMIT
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /runtime/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
# Through bin/kg's #! line (env -S): glibc's malloc settings and node's V8 flags. The manifests'
# kg containers set args only, so every DaemonSet runs kg this way.
ENTRYPOINT ["/app/bin/kg"]
