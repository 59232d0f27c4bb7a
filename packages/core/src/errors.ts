/**
 * Every failure ragfresh reports on purpose is a RagfreshError with a stable upper-case
 * `code`. Messages may change between releases; codes do not. Check errors with
 * `isRagfreshError(err, 'CODE')`, never with `instanceof`, because several copies of this
 * package can be loaded at once (a connector and an app may resolve different copies).
 */
export const ERROR_CODES = [
  'INVALID_URL',
  'URL_CREDENTIALS',
  'URL_NOT_CANONICAL',
  'INVALID_ARGUMENT',
  'INVALID_CONFIG',
  'INVALID_METADATA',
  'DIMENSION_MISMATCH',
  'NOT_SUPPORTED',
  'NOT_OPEN',
  'STORE_UNREACHABLE',
  'STORE_REJECTED',
  'FOREIGN_DATA',
  'EPOCH_CONFLICT',
  'LEASE_HELD',
  'LEASE_LOST',
  'VERIFY_FAILED',
  'CONFIRM_FAILED',
  'GATE_REJECTED',
  'JOURNAL_CORRUPT',
  'STATE_CORRUPT',
  /** The state store is empty or reset while the vector store holds published chunks. */
  'STATE_LOST',
  /** The vector store lost what the state calls current (deleted, reset or replaced). */
  'STORE_LOST',
  /** The configured embeddings are another vector space than the index's (docs/embeddings.md). */
  'SPACE_MISMATCH',
  'SSRF_REFUSED',
  'ROBOTS_DISALLOWED',
  'FETCH_FAILED',
  'EXTRACT_FAILED',
  'NOT_FOUND',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const BRAND = Symbol.for('ragfresh.error');

export interface RagfreshErrorOptions {
  /** Component that raised the error: a store name (`chroma`), `core`, `fetch`, ... */
  readonly scope?: string;
  readonly cause?: unknown;
  /** Structured details for logs and reports; never required to understand the message. */
  readonly details?: Readonly<Record<string, unknown>>;
}

export class RagfreshError extends Error {
  readonly code: ErrorCode;
  readonly scope: string;
  readonly details: Readonly<Record<string, unknown>>;
  readonly [BRAND] = true;

  constructor(code: ErrorCode, message: string, options: RagfreshErrorOptions = {}) {
    const scope = options.scope ?? 'core';
    super(
      `[ragfresh] [${scope}] ${message}`,
      options.cause === undefined ? {} : { cause: options.cause },
    );
    this.name = 'RagfreshError';
    this.code = code;
    this.scope = scope;
    this.details = options.details ?? {};
  }
}

/** True when `err` is a RagfreshError (from any copy of this package), optionally with `code`. */
export function isRagfreshError(err: unknown, code?: ErrorCode): err is RagfreshError {
  if (typeof err !== 'object' || err === null) return false;
  if ((err as { [BRAND]?: unknown })[BRAND] !== true) return false;
  return code === undefined || (err as { code?: unknown }).code === code;
}

/** Message of any thrown value, for one-line reports. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * The one line every surface (the CLI's stderr, an MCP tool error) reports a RagfreshError with:
 * a config error or a held lease as `ragfresh: <what to do>`, any other as
 * `<message> (code CODE)`. Anything else is an unexpected failure with its message.
 */
export function errorLine(err: unknown): string {
  if (isRagfreshError(err, 'INVALID_CONFIG'))
    return err.message.replace(/^\[ragfresh\] \[[^\]]+\] /, 'ragfresh: ');
  if (isRagfreshError(err, 'LEASE_HELD'))
    return err.message.replace(/^\[ragfresh\] (\[[^\]]+\] )?/, 'ragfresh: ');
  if (isRagfreshError(err)) return `${err.message} (code ${err.code})`;
  return `ragfresh: unexpected failure: ${errorMessage(err)}`;
}
