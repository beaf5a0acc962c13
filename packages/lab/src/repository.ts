import { fileURLToPath } from 'node:url';

/**
 * The checkout the lab runs from: this file is packages/lab/src/repository.ts, or, built, part of
 * kg's script in dist/cli/ (scripts/build.mjs bundles `kg lab`). bin/, dist/, src/ and manifests/
 * are there.
 */
export const repository = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../../../' : '../../', import.meta.url),
);
