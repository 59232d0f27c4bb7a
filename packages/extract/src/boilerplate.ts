import { RagfreshError, sha256Hex } from '@ragfresh/core';
import { FenceScanner } from './fence.js';
import { markdownToPlainText } from './plaintext.js';

/** Serialised form of a {@link BoilerplateModel}; plain JSON, safe to store. */
export interface BoilerplateModelJson {
  readonly format: 'ragfresh-boilerplate/1';
  readonly host: string;
  /** Pages the model was learned from. */
  readonly pages: number;
  /** A block is boilerplate when it appears on at least this share of pages. */
  readonly minShare: number;
  /** 16-hex sha256 prefixes of normalised boilerplate blocks, sorted. */
  readonly blocks: readonly string[];
}

export interface LearnBoilerplateOptions {
  /** Share of the host's pages a block must appear on. Default 0.5. */
  readonly minShare?: number;
  /** Pages a block must appear on, whatever the share. Default 3. */
  readonly minPages?: number;
}

const LIST_ITEM = /^\s*(?:[-*+]|\d{1,3}[.)])\s+/;

interface Block {
  readonly lines: string[];
  /** Fenced code and tables are never split or learned. */
  readonly atomic: boolean;
}

function splitBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  let current: string[] = [];
  const fences = new FenceScanner();
  let atomic = false;
  const flush = () => {
    if (current.length > 0) blocks.push({ lines: current, atomic });
    current = [];
    atomic = false;
  };
  for (const line of markdown.split('\n')) {
    const role = fences.next(line);
    if (role === 'code' || role === 'close') {
      current.push(line);
      if (role === 'close') flush();
      continue;
    }
    if (role === 'open') {
      flush();
      atomic = true;
      current.push(line);
      continue;
    }
    if (line.trim() === '') {
      flush();
      continue;
    }
    const isTable = /^\s*\|/.test(line);
    if (current.length > 0 && isTable !== atomic) flush();
    if (isTable) atomic = true;
    current.push(line);
  }
  flush();
  return blocks;
}

/** Normalised key text of a Markdown fragment: plain text, lower case, single spaces, no list marker. */
export function boilerplateKey(fragment: string): string {
  return markdownToPlainText(fragment.replace(LIST_ITEM, ''))
    .normalize('NFC')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}

const digest = (key: string) => sha256Hex(key).slice(0, 16);

/** Keys a block contributes: the whole paragraph, and each of its lines (list items). */
function blockKeys(block: Block): string[] {
  if (block.atomic) return [];
  const keys = new Set<string>();
  const whole = boilerplateKey(block.lines.join('\n'));
  if (whole) keys.add(whole);
  if (block.lines.length > 1) {
    for (const line of block.lines) {
      const k = boilerplateKey(line);
      if (k) keys.add(k);
    }
  }
  return [...keys];
}

/**
 * Blocks that repeat across a host's pages (navigation left in by extraction, cookie notes,
 * newsletter boxes, "related posts" headings) learned from the host's own Markdown, and
 * removed from any page of that host. Fenced code and tables are never learned or removed.
 */
export class BoilerplateModel {
  readonly host: string;
  readonly pages: number;
  readonly minShare: number;
  readonly #blocks: ReadonlySet<string>;

  private constructor(host: string, pages: number, minShare: number, blocks: Iterable<string>) {
    this.host = host;
    this.pages = pages;
    this.minShare = minShare;
    this.#blocks = new Set(blocks);
  }

  /** Learns from the Markdown of several pages of one host (at least 2 pages). */
  static learn(
    host: string,
    pages: readonly string[],
    options: LearnBoilerplateOptions = {},
  ): BoilerplateModel {
    const minShare = options.minShare ?? 0.5;
    const minPages = Math.max(2, options.minPages ?? 3);
    if (!(minShare > 0 && minShare <= 1)) {
      throw new RagfreshError('INVALID_ARGUMENT', `minShare must be in (0, 1], got ${minShare}.`, {
        scope: 'extract',
      });
    }
    const counts = new Map<string, number>();
    for (const page of pages) {
      const seen = new Set<string>();
      for (const block of splitBlocks(page.normalize('NFC')))
        for (const k of blockKeys(block)) seen.add(digest(k));
      for (const d of seen) counts.set(d, (counts.get(d) ?? 0) + 1);
    }
    const needed = Math.max(minPages, Math.ceil(minShare * pages.length));
    const blocks = [...counts].filter(([, n]) => n >= needed).map(([d]) => d);
    return new BoilerplateModel(host, pages.length, minShare, blocks.sort());
  }

  static fromJSON(json: BoilerplateModelJson): BoilerplateModel {
    if (json?.format !== 'ragfresh-boilerplate/1' || !Array.isArray(json.blocks)) {
      throw new RagfreshError(
        'INVALID_ARGUMENT',
        'not a serialised BoilerplateModel (format ragfresh-boilerplate/1).',
        {
          scope: 'extract',
        },
      );
    }
    return new BoilerplateModel(json.host, json.pages, json.minShare, json.blocks);
  }

  /** Number of learned boilerplate blocks. */
  get size(): number {
    return this.#blocks.size;
  }

  isBoilerplate(fragment: string): boolean {
    const k = boilerplateKey(fragment);
    return k !== '' && this.#blocks.has(digest(k));
  }

  /** Removes boilerplate paragraphs and lines; code and tables pass through untouched. */
  strip(markdown: string): { markdown: string; removed: number } {
    let removed = 0;
    const kept: string[] = [];
    for (const block of splitBlocks(markdown)) {
      if (block.atomic) {
        kept.push(block.lines.join('\n'));
        continue;
      }
      if (this.isBoilerplate(block.lines.join('\n'))) {
        removed++;
        continue;
      }
      const lines =
        block.lines.length > 1 ? block.lines.filter((l) => !this.isBoilerplate(l)) : block.lines;
      removed += block.lines.length - lines.length;
      if (lines.length > 0) kept.push(lines.join('\n'));
    }
    return { markdown: kept.join('\n\n'), removed };
  }

  toJSON(): BoilerplateModelJson {
    return {
      format: 'ragfresh-boilerplate/1',
      host: this.host,
      pages: this.pages,
      minShare: this.minShare,
      blocks: [...this.#blocks].sort(),
    };
  }
}

/**
 * The block digests one page contributes to learning, in page order, each once: what
 * `BoilerplateModel.learn` counts for the page and what `strip` tests. For learners that keep
 * counts of their own (the engine's per-host sketch) and build a model with `fromJSON`.
 */
export function boilerplateDigests(markdown: string): string[] {
  const seen = new Set<string>();
  for (const block of splitBlocks(markdown.normalize('NFC')))
    for (const k of blockKeys(block)) seen.add(digest(k));
  return [...seen];
}

/** Learns one model per host from `(url, markdown)` pairs; hosts with fewer than 2 pages get none. */
export function learnBoilerplateByHost(
  pages: ReadonlyArray<{ readonly url: string; readonly markdown: string }>,
  options: LearnBoilerplateOptions = {},
): Map<string, BoilerplateModel> {
  const byHost = new Map<string, string[]>();
  for (const p of pages) {
    const host = new URL(p.url).host.toLowerCase();
    const list = byHost.get(host) ?? [];
    list.push(p.markdown);
    byHost.set(host, list);
  }
  const models = new Map<string, BoilerplateModel>();
  for (const [host, list] of byHost)
    if (list.length >= 2) models.set(host, BoilerplateModel.learn(host, list, options));
  return models;
}
