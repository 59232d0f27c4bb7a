import { createGzip } from 'node:zlib';

const bombs = new Map<number, Promise<Buffer>>();
const CHUNK = Buffer.alloc(1 << 20, 0x20);
const PREFIX = Buffer.from(
  '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Docs</title></head><body>\n',
);

/**
 * A small, valid single-member gzip stream that inflates to `inflatedBytes` bytes (an HTML
 * prefix, then spaces). Built once per size and kept: at level 9 runs of one byte compress
 * about 1000:1, so 256 MiB costs about 256 KiB.
 */
export function gzipBomb(inflatedBytes: number): Promise<Buffer> {
  let bomb = bombs.get(inflatedBytes);
  if (bomb === undefined) {
    bomb = build(inflatedBytes);
    bombs.set(inflatedBytes, bomb);
  }
  return bomb;
}

async function build(inflatedBytes: number): Promise<Buffer> {
  const gzip = createGzip({ level: 9 });
  const out: Buffer[] = [];
  gzip.on('data', (chunk: Buffer) => out.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    gzip.on('end', resolve);
    gzip.on('error', reject);
  });
  let left = inflatedBytes;
  const head = PREFIX.subarray(0, Math.min(PREFIX.length, left));
  gzip.write(head);
  left -= head.length;
  while (left > 0) {
    const n = Math.min(left, CHUNK.length);
    if (!gzip.write(CHUNK.subarray(0, n))) await new Promise((r) => gzip.once('drain', r));
    left -= n;
  }
  gzip.end();
  await ended;
  return Buffer.concat(out);
}
