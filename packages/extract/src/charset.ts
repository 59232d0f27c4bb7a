import { decodeBody } from '@ragfresh/core';

/**
 * HTML bytes to a string with the decoder fetching uses (`decodeBody` in `@ragfresh/core`), so
 * what a benchmark or a caller extracts from bytes is what a refresh would: a byte-order mark,
 * then the Content-Type charset, then a `<meta charset>` / http-equiv declaration in the first
 * 4 KiB, then UTF-8 when the bytes are valid UTF-8, else windows-1252. Labels the platform does
 * not know are skipped rather than thrown on: a typo in a meta tag still leaves a page worth
 * extracting.
 */
export function decodeHtml(bytes: Uint8Array, contentType = 'text/html'): string {
  return decodeBody(bytes, contentType).text;
}
