/**
 * A value in a cluster object that cannot be used. It names the object, the field and the
 * value, so an operator can find and fix it; the object drops out of the mesh, nothing else does.
 */
export class ValidationError extends Error {
  constructor(
    readonly object: string,
    readonly field: string,
    readonly value: unknown,
    readonly reason: string,
  ) {
    super(`${object}: field ${field}: ${reason}: ${JSON.stringify(value)}`);
    this.name = 'ValidationError';
  }
}

/** A mistake of the user's (a bad flag, a missing file): printed as one line, no stack trace. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
