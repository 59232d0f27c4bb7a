/**
 * Bytes to a string, following the HTML encoding sniffing order in short: BOM, then the
 * charset of the Content-Type header, then a `<meta charset>` / `<meta http-equiv>`
 * declaration in the first 4 KiB, then UTF-8. Unknown labels fall back to UTF-8 rather
 * than throwing, because a page with a typo in its meta tag is still worth extracting.
 */
export function decodeHtml(bytes: Uint8Array, contentType?: string): string {
  const bom = bomEncoding(bytes);
  if (bom !== undefined) return decodeWith(bytes.subarray(bom.skip), bom.label);
  const fromHeader = contentType === undefined ? undefined : charsetOfContentType(contentType);
  if (fromHeader !== undefined && isSupported(fromHeader)) return decodeWith(bytes, fromHeader);
  const fromMeta = sniffMetaCharset(bytes);
  if (fromMeta !== undefined && isSupported(fromMeta)) return decodeWith(bytes, fromMeta);
  return decodeWith(bytes, 'utf-8');
}

/** The charset parameter of a Content-Type value, lower-cased, or undefined. */
export function charsetOfContentType(contentType: string): string | undefined {
  const m = /;\s*charset\s*=\s*("?)([^";\s]+)\1/i.exec(contentType);
  return m?.[2]?.toLowerCase();
}

/** The charset declared by a meta element in the first 4 KiB (read as Latin-1), or undefined. */
export function sniffMetaCharset(bytes: Uint8Array): string | undefined {
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, 4096));
  const direct = /<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]+)/i.exec(head);
  if (direct?.[1] !== undefined) {
    const label = direct[1].toLowerCase();
    // A UTF-16 declaration inside an ASCII-compatible byte stream is a lie by definition.
    return label.startsWith('utf-16') ? 'utf-8' : label;
  }
  return undefined;
}

function bomEncoding(bytes: Uint8Array): { label: string; skip: number } | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf)
    return { label: 'utf-8', skip: 3 };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { label: 'utf-16be', skip: 2 };
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { label: 'utf-16le', skip: 2 };
  return undefined;
}

function isSupported(label: string): boolean {
  try {
    new TextDecoder(label);
    return true;
  } catch {
    return false;
  }
}

function decodeWith(bytes: Uint8Array, label: string): string {
  return new TextDecoder(label).decode(bytes);
}
