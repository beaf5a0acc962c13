/**
 * zod/mini, the functional build of zod: the same checks and messages, and only the functions used
 * get bundled (docs/performance.md#lazy-loading). It carries no locale, so English, which the full
 * build sets by default, is set here once for every schema of the model. Import it as a namespace:
 * `import * as z from './zod.js'`.
 */
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());

export * from 'zod/mini';
