// Its own module (and the `@ragfresh/extract/codes` subpath) so a config can be checked
// against the codes without loading the HTML parser: `ragfresh status` starts without it.

/**
 * Every code `detectNotDocument` can give, lower-case as they appear in reasons
 * (`soft_404: …`): what a source's `classify.ignore` may name.
 */
export const NOT_DOCUMENT_CODES = Object.freeze([
  'http_status',
  'consent_wall',
  'bot_challenge',
  'login_wall',
  'soft_404',
  'error_page',
  'rate_limited',
  'empty_app_shell',
  'empty',
] as const);
export type NotDocumentReasonCode = (typeof NOT_DOCUMENT_CODES)[number];
