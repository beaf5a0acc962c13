/** TLS for the webhook tests: a certificate made with openssl, as an operator would. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** A self-signed certificate for 127.0.0.1 and localhost: its own CA. */
export function makeCertificate(into: string, name: string): { cert: string; key: string } {
  const cert = join(into, `${name}.crt`);
  const key = join(into, `${name}.key`);
  const r = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=kilo-peer-validation',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, `openssl failed: ${r.stderr}`);
  return { cert, key };
}
