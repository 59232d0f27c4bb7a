import { pipeline, Readable } from 'node:stream';
import zlib from 'node:zlib';

export type BodyReadResult =
  | { readonly kind: 'complete'; readonly bytes: Buffer }
  | { readonly kind: 'too-large'; readonly decodedBytesSeen: number };

/** Destroys a body nobody will read; undici reports that as an error event, which is expected here. */
export function discard(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

/** Content codings this reader can undo, in the order they were applied. */
export function parseContentEncoding(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

export function isSupportedEncoding(coding: string): boolean {
  return ['gzip', 'x-gzip', 'deflate', 'br', 'zstd'].includes(coding);
}

async function* prepend(first: Buffer, rest: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  yield first;
  for (;;) {
    const n = await rest.next();
    if (n.done === true) return;
    yield n.value;
  }
}

/**
 * `deflate` is specified as zlib-wrapped, but some servers send raw deflate: look at the first
 * byte pair (a zlib header has CM=8 and a multiple-of-31 check) and pick the right inflater.
 */
function inflateAuto(source: Readable): Readable {
  const iterator = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const generator = async function* (): AsyncGenerator<Buffer> {
    const first = await iterator.next();
    if (first.done === true) return;
    const head = first.value;
    const b0 = head[0] ?? 0;
    const b1 = head[1] ?? 0;
    const zlibWrapped = (b0 & 0x0f) === 8 && ((b0 << 8) | b1) % 31 === 0;
    const inflater = zlibWrapped ? zlib.createInflate() : zlib.createInflateRaw();
    const input = Readable.from(prepend(head, iterator));
    input.on('error', (e) => inflater.destroy(e));
    input.pipe(inflater);
    for await (const chunk of inflater) yield chunk as Buffer;
  };
  return Readable.from(generator(), { objectMode: false });
}

function decoderFor(coding: string): NodeJS.ReadWriteStream | ((s: Readable) => Readable) {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return zlib.createGunzip();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      return (
        zlib as unknown as { createZstdDecompress: () => NodeJS.ReadWriteStream }
      ).createZstdDecompress();
    default:
      return inflateAuto;
  }
}

/**
 * Reads a response body, undoing its content codings as it streams and counting DECODED bytes:
 * as soon as more than `maxBytes` come out, everything is destroyed and `too-large` returned, so a
 * decompression bomb costs at most `maxBytes` of memory. Rejects with the stream's error
 * (timeouts, resets, corrupt compressed data).
 */
export async function readBody(
  body: Readable,
  codings: readonly string[],
  maxBytes: number,
  overflow: 'stop' | 'truncate' = 'stop',
): Promise<BodyReadResult> {
  let stream: Readable = body;
  // Codings are listed in the order applied; undo them in reverse.
  for (const coding of [...codings].reverse()) {
    const d = decoderFor(coding);
    if (typeof d === 'function') {
      stream = d(stream);
    } else {
      stream = pipeline(
        stream,
        d as unknown as NodeJS.WritableStream,
        () => {},
      ) as unknown as Readable;
    }
  }
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of stream) {
      const buf = chunk as Buffer;
      total += buf.length;
      if (total > maxBytes) {
        if (overflow === 'truncate') chunks.push(buf.subarray(0, buf.length - (total - maxBytes)));
        if (stream !== body) discard(stream);
        discard(body);
        if (overflow === 'truncate')
          return { kind: 'complete', bytes: Buffer.concat(chunks, maxBytes) };
        return { kind: 'too-large', decodedBytesSeen: total };
      }
      chunks.push(buf);
    }
  } catch (err) {
    discard(body);
    throw err;
  }
  return { kind: 'complete', bytes: Buffer.concat(chunks, total) };
}
