/** Where the charset used to decode a body came from. */
export type CharsetSource =
  | 'bom'
  | 'header'
  | 'meta'
  | 'xml-declaration'
  | 'utf8-valid'
  | 'fallback';

export interface DecodedText {
  readonly text: string;
  /** WHATWG encoding name actually used (`utf-8`, `windows-1252`, `shift_jis`, ...). */
  readonly charset: string;
  readonly charsetSource: CharsetSource;
}

const PRESCAN_BYTES = 4096;

/** The WHATWG name of an encoding label, or undefined when TextDecoder does not know it. */
export function encodingForLabel(label: string | undefined): string | undefined {
  if (label === undefined) return undefined;
  const l = label.trim().replace(/^["']|["']$/g, '');
  if (l === '') return undefined;
  try {
    return new TextDecoder(l).encoding;
  } catch {
    return undefined;
  }
}

/** `charset` parameter of a Content-Type header value. */
export function charsetFromContentType(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const m = /;\s*charset\s*=\s*("?)([^";\s]+)\1/i.exec(contentType);
  return m?.[2];
}

function bomEncoding(bytes: Uint8Array): string | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  return undefined;
}

/** `<meta charset>` or `<meta http-equiv="Content-Type" content="...; charset=...">` in the first 4 KB. */
export function metaCharset(bytes: Uint8Array): string | undefined {
  const head = new TextDecoder('windows-1252')
    .decode(bytes.subarray(0, PRESCAN_BYTES))
    .replace(/<!--[\s\S]*?-->/g, '');
  const metaTags = head.match(/<meta\b[^>]*>/gi) ?? [];
  for (const tag of metaTags) {
    const direct = /\bcharset\s*=\s*["']?\s*([^\s"'/>;]+)/i.exec(tag);
    if (direct !== null) {
      const label = direct[1];
      if (encodingForLabel(label) !== undefined) return label;
    }
  }
  return undefined;
}

function xmlDeclarationCharset(bytes: Uint8Array): string | undefined {
  const head = new TextDecoder('windows-1252').decode(bytes.subarray(0, 256));
  return /^\s*<\?xml[^>]*\bencoding\s*=\s*["']([^"']+)["']/i.exec(head)?.[1];
}

function isValidUtf8(bytes: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * Picks the charset of a body: a byte-order mark, then the Content-Type charset, then (HTML)
 * `<meta charset>` / http-equiv in the first 4 KB or (XML) the XML declaration, then UTF-8 if
 * the bytes are valid UTF-8, else windows-1252. A BOM wins over the header, as in browsers
 * (WHATWG "decode"): a UTF-8 BOM under a `charset=iso-8859-1` header is UTF-8.
 * Labels TextDecoder does not know are skipped.
 */
export function detectCharset(
  bytes: Uint8Array,
  contentType: string | undefined,
): { readonly charset: string; readonly charsetSource: CharsetSource } {
  const bom = bomEncoding(bytes);
  if (bom !== undefined) return { charset: bom, charsetSource: 'bom' };
  const header = encodingForLabel(charsetFromContentType(contentType));
  if (header !== undefined) return { charset: header, charsetSource: 'header' };
  const essence = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const isXml = essence.endsWith('/xml') || essence.endsWith('+xml');
  if (isXml) {
    const xml = encodingForLabel(xmlDeclarationCharset(bytes));
    if (xml !== undefined) return { charset: xml, charsetSource: 'xml-declaration' };
  }
  if (essence === 'text/html' || essence === 'application/xhtml+xml' || essence === '') {
    let meta = encodingForLabel(metaCharset(bytes));
    // HTML: a meta declaring UTF-16 in an ASCII-compatible prescan means UTF-8.
    if (meta === 'utf-16le' || meta === 'utf-16be') meta = 'utf-8';
    if (meta === 'x-user-defined') meta = 'windows-1252';
    if (meta !== undefined) return { charset: meta, charsetSource: 'meta' };
  }
  if (isValidUtf8(bytes)) return { charset: 'utf-8', charsetSource: 'utf8-valid' };
  return { charset: 'windows-1252', charsetSource: 'fallback' };
}

/** Decodes a body with the detected charset (TextDecoder, fatal off: bad bytes become U+FFFD). */
export function decodeBody(bytes: Uint8Array, contentType: string | undefined): DecodedText {
  const { charset, charsetSource } = detectCharset(bytes, contentType);
  const text = new TextDecoder(charset, { fatal: false }).decode(bytes);
  return { text, charset, charsetSource };
}
