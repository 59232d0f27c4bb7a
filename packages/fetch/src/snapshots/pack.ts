import type { FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';

/**
 * The pack format of raw snapshots: an append-only file of frames, each
 *
 *   magic u32 'RFP1' · header bytes u32 · body bytes u32 · crc32(header ‖ body) u32 ·
 *   header (UTF-8 JSON: `{ digest, ...meta }`) · body (gzip of the raw bytes; empty = an
 *   observation of a body stored earlier)
 *
 * all integers big-endian. A writer only appends whole frames to a pack it alone writes, so a
 * crash leaves at most one torn frame at the end, which every reader stops at (its length runs
 * past the end of the file, or its checksum fails). A sealed pack has a sidecar index
 * (`<pack>.idx`, written once when its writer closes or rolls over) so opening a store reads
 * one small file per pack instead of every frame.
 */
export const FRAME_MAGIC = 0x52465031;
export const FRAME_HEAD_BYTES = 16;
export const PACK_SUFFIX = '.pack';
export const INDEX_SUFFIX = '.idx';
const INDEX_FORMAT = 1;

/** Where one frame sits, and what the index needs of its header without reading it. */
export interface FrameLoc {
  readonly pack: string;
  readonly offset: number;
  readonly headerBytes: number;
  readonly bodyBytes: number;
  readonly digest: string;
  readonly fetchedAt: string;
}

export function frameBytes(loc: FrameLoc): number {
  return FRAME_HEAD_BYTES + loc.headerBytes + loc.bodyBytes;
}

export function encodeFrame(header: Uint8Array, body: Uint8Array): Buffer {
  const head = Buffer.allocUnsafe(FRAME_HEAD_BYTES);
  head.writeUInt32BE(FRAME_MAGIC, 0);
  head.writeUInt32BE(header.byteLength, 4);
  head.writeUInt32BE(body.byteLength, 8);
  head.writeUInt32BE(crc32(body, crc32(header)), 12);
  return Buffer.concat([head, header, body]);
}

export interface DecodedFrame {
  readonly header: Buffer;
  readonly body: Buffer;
}

/** Reads and checks the frame at `loc`; undefined when it is torn or does not match. */
export async function readFrame(
  fh: FileHandle,
  offset: number,
  headerOnly = false,
): Promise<DecodedFrame | undefined> {
  const head = Buffer.alloc(FRAME_HEAD_BYTES);
  const { bytesRead } = await fh.read(head, 0, FRAME_HEAD_BYTES, offset);
  if (bytesRead < FRAME_HEAD_BYTES || head.readUInt32BE(0) !== FRAME_MAGIC) return undefined;
  const headerBytes = head.readUInt32BE(4);
  const bodyBytes = headerOnly ? 0 : head.readUInt32BE(8);
  const rest = Buffer.alloc(headerBytes + bodyBytes);
  const got = await fh.read(rest, 0, rest.byteLength, offset + FRAME_HEAD_BYTES);
  if (got.bytesRead < rest.byteLength) return undefined;
  const header = rest.subarray(0, headerBytes);
  const body = rest.subarray(headerBytes);
  if (!headerOnly && crc32(body, crc32(header)) !== head.readUInt32BE(12)) return undefined;
  return { header, body };
}

/**
 * Frames of `pack` from byte `from` on, in order, up to the first torn or damaged frame;
 * `end` is where the intact frames end (where a later scan resumes).
 */
export async function scanFrames(
  fh: FileHandle,
  pack: string,
  from: number,
): Promise<{ frames: FrameLoc[]; end: number }> {
  const frames: FrameLoc[] = [];
  let offset = from;
  for (;;) {
    const frame = await readFrame(fh, offset);
    if (frame === undefined) return { frames, end: offset };
    let header: { digest?: unknown; fetchedAt?: unknown };
    try {
      header = JSON.parse(frame.header.toString('utf8')) as typeof header;
    } catch {
      return { frames, end: offset };
    }
    if (typeof header.digest !== 'string' || typeof header.fetchedAt !== 'string')
      return { frames, end: offset };
    frames.push({
      pack,
      offset,
      headerBytes: frame.header.byteLength,
      bodyBytes: frame.body.byteLength,
      digest: header.digest,
      fetchedAt: header.fetchedAt,
    });
    offset += FRAME_HEAD_BYTES + frame.header.byteLength + frame.body.byteLength;
  }
}

/** The sealed index of a pack: its length when sealed and every frame's location. */
export function encodeIndex(bytes: number, frames: readonly FrameLoc[]): string {
  return JSON.stringify({
    format: INDEX_FORMAT,
    bytes,
    frames: frames.map((f) => [f.digest, f.offset, f.headerBytes, f.bodyBytes, f.fetchedAt]),
  });
}

/** Undefined when the index is unreadable or of another format (the pack is scanned instead). */
export function decodeIndex(
  pack: string,
  text: string,
): { bytes: number; frames: FrameLoc[] } | undefined {
  try {
    const raw = JSON.parse(text) as { format?: unknown; bytes?: unknown; frames?: unknown };
    if (raw.format !== INDEX_FORMAT || typeof raw.bytes !== 'number' || !Array.isArray(raw.frames))
      return undefined;
    const frames = (raw.frames as [string, number, number, number, string][]).map(
      ([digest, offset, headerBytes, bodyBytes, fetchedAt]) => ({
        pack,
        offset,
        headerBytes,
        bodyBytes,
        digest,
        fetchedAt,
      }),
    );
    return { bytes: raw.bytes, frames };
  } catch {
    return undefined;
  }
}

/** `<time36>-<pid>-<random>.pack`: unique per writer, and names the process that writes it. */
export function packName(random: string): string {
  return `${Date.now().toString(36)}-${process.pid}-${random}${PACK_SUFFIX}`;
}

/** The pid a pack name carries (its writer), or undefined for a name of another shape. */
export function packWriterPid(name: string): number | undefined {
  const m = /^[0-9a-z]+-(\d+)-[0-9a-f]+\.pack$/.exec(name);
  return m === null ? undefined : Number(m[1]);
}
