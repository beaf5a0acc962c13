/**
 * The HTTP status of a failed Kubernetes request, whichever way the client reported it:
 * `ApiException.code` from the generated API, `statusCode` from `Watch`. Undefined for network errors.
 */
export function statusCodeOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e.statusCode === 'number') return e.statusCode;
  if (typeof e.code === 'number') return e.code;
  return undefined;
}

/**
 * One short line for logs and error messages. The client's ApiException message carries the
 * whole response body and headers; only the status and the server's message matter.
 */
export function describeError(err: unknown): string {
  const status = statusCodeOf(err);
  if (status !== undefined) {
    const body = (err as { body?: unknown }).body;
    let message = '';
    if (typeof body === 'string') {
      try {
        message = (JSON.parse(body) as { message?: string }).message ?? '';
      } catch {
        message = body.slice(0, 200);
      }
    } else if (typeof body === 'object' && body !== null) {
      message = (body as { message?: string }).message ?? '';
    }
    if (!message && err instanceof Error && !err.message.startsWith('HTTP-Code')) message = err.message;
    return message ? `HTTP ${status}: ${message}` : `HTTP ${status}`;
  }
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    const first = err.message.split('\n')[0] ?? '';
    return code && !first.includes(code) ? `${code}: ${first}` : first;
  }
  return String(err);
}
