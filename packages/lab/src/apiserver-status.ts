/** kube-apiserver's `Status` answers, and an error that carries one. */

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  code: number;
}

export function status(code: number, reason: string, message: string): Status {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

/** A request refused: thrown by the handlers, answered as a Status with this code. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }

  get status(): Status {
    return status(this.code, this.reason, this.message);
  }
}

export const notFound = (resource: string, name: string): ApiError =>
  new ApiError(404, 'NotFound', `${resource} "${name}" not found`);
