import { RagfreshError } from '@ragfresh/core';

/** A caller's mistake: one line saying what was wrong and what to pass instead. */
export function invalid(message: string, details?: Record<string, unknown>): RagfreshError {
  return new RagfreshError('INVALID_ARGUMENT', message, {
    scope: 'sim',
    ...(details === undefined ? {} : { details }),
  });
}
