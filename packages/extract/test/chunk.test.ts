import { chunkId } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import {
  CHUNKER_VERSION,
  CONTINUED_FROM_NOTE,
  CONTINUES_NOTE,
  chunkMarkdown,
  chunkMarkdownWithSplitter,
  EXTRACTOR_VERSION,
  extractPage,
  prepareDocument,
  type TokenCounter,
  tiktokenCounter,
} from '../src/index.js';
import { fixture } from './helpers.js';

const words: TokenCounter = { name: 'words', count: (t) => (t.match(/\S+/g) ?? []).length };

describe('tiktokenCounter', () => {
  it('counts cl100k_base tokens from the local ranks', () => {
    const c = tiktokenCounter();
    expect(c.name).toBe('tiktoken:cl100k_base');
    expect(c.count('hello world')).toBe(2);
    expect(c.count('')).toBe(0);
    expect(c.count('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('refuses an unknown encoding with INVALID_ARGUMENT', () => {
    expect(() => tiktokenCounter('nope' as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });
});

describe('chunkMarkdown', () => {
  it('splits at headings and carries the heading path', () => {
    const md =
      '# Guide\n\nIntro paragraph with enough words to stand alone as a chunk here.\n\n## Install\n\nRun the installer.\n\n### Linux\n\nUse the package.\n\n## Use\n\nCall it.';
    const chunks = chunkMarkdown(md, { maxTokens: 20, minTokens: 1, counter: words });
    expect(chunks.map((c) => c.headingPath)).toEqual([
      ['Guide'],
      ['Guide', 'Install'],
      ['Guide', 'Install', 'Linux'],
      ['Guide', 'Use'],
    ]);
    expect(chunks[2]?.text).toBe('### Linux\n\nUse the package.');
  });

  it('treats # lines inside fenced code as code, never as headings', () => {
    const page = extractPage(fixture('code-comments.html'));
    const chunks = chunkMarkdown(page.markdown, {
      maxTokens: 2000,
      minTokens: 1,
      title: page.title,
    });
    expect(chunks.map((c) => c.headingPath)).toEqual([
      ['Provisioning script — Ops handbook'],
      ['Provisioning script — Ops handbook', 'The script'],
      ['Provisioning script — Ops handbook', 'After running'],
    ]);
    expect(chunks[1]?.text).toContain('# step 39: comment line that must stay code, not a heading');
  });

  it('never cuts a code block or table that fits the hard maximum, even over the budget', () => {
    const page = extractPage(fixture('code-comments.html'));
    const chunks = chunkMarkdown(page.markdown, { maxTokens: 100, hardMaxTokens: 2000 });
    const withCode = chunks.filter((c) => c.text.includes('```bash'));
    expect(withCode).toHaveLength(1);
    expect(withCode[0]?.text.split('\n').filter((l) => l.startsWith('# step'))).toHaveLength(20);
    expect(withCode[0]!.tokenCount).toBeGreaterThan(100);
  });

  it('cuts a code block beyond the hard maximum on line boundaries, each piece fenced and marked', () => {
    const page = extractPage(fixture('code-comments.html'));
    const chunks = chunkMarkdown(page.markdown, { maxTokens: 120, hardMaxTokens: 200 }).filter(
      (c) => c.text.includes('```bash'),
    );
    expect(chunks.length).toBeGreaterThan(2);
    const lines: string[] = [];
    chunks.forEach((c, i) => {
      const body = c.text.split('\n');
      const open = body.indexOf('```bash');
      const close = body.indexOf('```', open + 1);
      expect(open).toBeGreaterThanOrEqual(0);
      expect(close).toBeGreaterThan(open);
      lines.push(...body.slice(open + 1, close));
      if (i > 0) expect(body[0]).toBe(CONTINUED_FROM_NOTE);
      if (i < chunks.length - 1) expect(body[body.length - 1]).toBe(CONTINUES_NOTE);
      expect(c.tokenCount).toBeLessThanOrEqual(120);
    });
    expect(lines).toHaveLength(40);
    expect(lines[39]).toBe('echo "running step 40" && sleep 0');
  });

  it('cuts an oversized table on rows and repeats its header', () => {
    const rows = Array.from({ length: 60 }, (_, i) => `| row ${i} | value ${i} |`);
    const md = `## Data\n\n| Name | Value |\n| --- | --- |\n${rows.join('\n')}`;
    const chunks = chunkMarkdown(md, { maxTokens: 80, hardMaxTokens: 100, counter: words });
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.text).toContain('| Name | Value |\n| --- | --- |');
    expect(
      chunks.map((c) => c.text.match(/\| row \d+ \|/g)?.length ?? 0).reduce((a, b) => a + b, 0),
    ).toBe(60);
  });

  it('packs paragraphs up to the budget and merges a tiny trailing chunk', () => {
    const para = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
    const md = `## S\n\n${para(30)}\n\n${para(30)}\n\n${para(30)}\n\n${para(3)}`;
    const chunks = chunkMarkdown(md, { maxTokens: 70, minTokens: 10, counter: words });
    expect(chunks.map((c) => c.tokenCount)).toEqual([62, 33]);
  });

  it('roots heading paths at the title when the Markdown has no h1', () => {
    expect(
      chunkMarkdown('## A\n\ntext', { title: 'Doc', counter: words }).map((c) => c.headingPath),
    ).toEqual([['Doc', 'A']]);
    expect(
      chunkMarkdown('# Own\n\n## A\n\ntext', { title: 'Doc', counter: words }).map(
        (c) => c.headingPath,
      ),
    ).toEqual([['Own', 'A']]);
  });

  it('is deterministic', () => {
    const md = extractPage(fixture('docusaurus.html')).markdown;
    expect(chunkMarkdown(md, { maxTokens: 40 })).toEqual(chunkMarkdown(md, { maxTokens: 40 }));
  });
});

describe('chunkMarkdown: no tiny or heading-only chunks', () => {
  const para = (tag: string, n: number) =>
    Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');

  it('merges tiny same-level sibling sections within the budget, under their parent path', () => {
    const md = `# Guide\n\n## A\n\n${para('a', 5)}\n\n## B\n\n${para('b', 5)}\n\n## C\n\n${para('c', 50)}`;
    const chunks = chunkMarkdown(md, { maxTokens: 60, minTokens: 10, counter: words });
    expect(chunks.map((c) => c.headingPath)).toEqual([['Guide'], ['Guide', 'C']]);
    expect(chunks[0]!.text).toBe(`# Guide\n\n## A\n\n${para('a', 5)}\n\n## B\n\n${para('b', 5)}`);
    expect(chunks.every((c) => c.tokenCount >= 10)).toBe(true);
  });

  it('never emits a heading-only chunk, even for an empty last section', () => {
    const md = `## A\n\n${para('a', 30)}\n\n## B\n\n### B1\n\n${para('b', 30)}\n\n## Empty`;
    const chunks = chunkMarkdown(md, { maxTokens: 40, minTokens: 5, counter: words });
    for (const c of chunks) {
      expect(c.text.split('\n').some((l) => l.trim() !== '' && !l.startsWith('#'))).toBe(true);
    }
    expect(chunks[1]!.headingPath).toEqual(['B', 'B1']);
    expect(chunks[1]!.text.startsWith('## B\n\n### B1')).toBe(true);
    expect(chunks.map((c) => c.text).join('\n\n')).toContain('## Empty');
  });

  it('joins a sliver walled in by a full table to the chunk past the table', () => {
    const row = (i: number) => `| r${i} | ${para(`v${i}-`, 3)} |`;
    const table = ['| k | v |', '| --- | --- |', ...Array.from({ length: 7 }, (_, i) => row(i))];
    const md = `# Doc\n\n## A\n\n${para('a', 20)}\n\n## B\n\n${table.join('\n')}\n\n## C\n\nthree small words`;
    const opts = { maxTokens: 40, hardMaxTokens: 62, minTokens: 10, counter: words };
    const chunks = chunkMarkdown(md, opts);
    // The table section (heading + table) is nearly hardMaxTokens: nothing fits beside it.
    const tableChunk = chunks.find((c) => c.text.includes('| r6 |'))!;
    expect(tableChunk.tokenCount + 5).toBeGreaterThan(62);
    expect(chunks.every((c) => c.tokenCount >= 10)).toBe(true);
    expect(chunks.map((c) => c.headingPath)).toEqual([['Doc'], ['Doc', 'B']]);
    expect(chunks[0]!.text).toBe(`# Doc\n\n## A\n\n${para('a', 20)}\n\n## C\n\nthree small words`);
    // With room beside the table, the sliver stays in reading order after it.
    const roomy = chunkMarkdown(md, { ...opts, hardMaxTokens: 80 });
    expect(
      roomy[roomy.length - 1]!.text.endsWith(
        '| r6 | v6-0 v6-1 v6-2 |\n\n## C\n\nthree small words',
      ),
    ).toBe(true);
  });

  it("keeps a parent's own text under the parent's path when it joins its subsection", () => {
    const md = `## Parent\n\nshort intro\n\n### Child\n\n${para('c', 20)}`;
    const [chunk, ...rest] = chunkMarkdown(md, { maxTokens: 60, minTokens: 10, counter: words });
    expect(rest).toEqual([]);
    expect(chunk!.headingPath).toEqual(['Parent']);
  });

  it('cuts an oversized paragraph at sentences into balanced pieces', () => {
    const sentence = (i: number) => `Sentence ${i} has exactly seven words here.`;
    const md = Array.from({ length: 21 }, (_, i) => sentence(i)).join(' ');
    const chunks = chunkMarkdown(md, { maxTokens: 100, minTokens: 10, counter: words });
    expect(chunks.map((c) => c.tokenCount)).toEqual([77, 70]);
    expect(chunks.every((c) => /\.$/.test(c.text))).toBe(true);
  });

  it('never cuts inside a Markdown link or image that fits the budget', () => {
    // A card grid flattened into one line: linked names with spaces, image-in-link cards
    // written with no space between them, and a sentence end inside a link's text.
    const card = (i: number) =>
      `[![Photo of desk ${i}, oak top](https://cdn.example/d${i}.jpg)](https://shop.example/desk-${i})[Desk model ${i} with two drawers](https://shop.example/d/${i})`;
    const md = `${Array.from({ length: 12 }, (_, i) => card(i)).join('')} [Read Dr. Smith on desks. More](https://x.example/a)`;
    const chunks = chunkMarkdown(md, { maxTokens: 40, minTokens: 5, counter: words });
    expect(chunks.length).toBeGreaterThan(3);
    const link = /!?\[(?:[^[\]]|\[[^[\]]*\])*\]\([^()\s]*\)/g;
    for (const c of chunks) {
      // Every bracket and parenthesis belongs to a whole link in its own chunk.
      expect(c.text.replace(link, '')).not.toMatch(/[[\]()]/);
    }
    expect(chunks.map((c) => c.text.replace(/\s+/g, '')).join('')).toBe(md.replace(/\s+/g, ''));
  });

  it('cuts inside a link when the link alone exceeds the budget', () => {
    const long = `[${para('w', 60)}](https://x.example/a)`;
    const chunks = chunkMarkdown(long, { maxTokens: 20, minTokens: 5, counter: words });
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.every((c) => c.tokenCount <= 20)).toBe(true);
  });

  it('counts each block once and never recounts the final chunks', () => {
    const seen: string[] = [];
    const spy: TokenCounter = {
      name: 'spy',
      count: (t) => {
        seen.push(t);
        return words.count(t);
      },
    };
    const md = Array.from({ length: 30 }, (_, i) => `## S${i}\n\n${para(`w${i}-`, 12)}`).join(
      '\n\n',
    );
    const chunks = chunkMarkdown(md, { maxTokens: 50, minTokens: 5, counter: spy });
    const multiPart = chunks.filter((c) => c.text.includes('\n\n')).map((c) => c.text);
    expect(multiPart.length).toBeGreaterThan(0);
    expect(seen.filter((t) => multiPart.includes(t))).toEqual([]);
    // Each of the 60 blocks once; the rest are the few-character snippets around joins.
    expect(seen.filter((t) => t.length > 40)).toHaveLength(30);
    expect(seen.reduce((n, t) => n + t.length, 0)).toBeLessThan(md.length * 1.5);
  });

  it('cuts a huge paragraph with a number of counts linear in its words', () => {
    let calls = 0;
    const counting: TokenCounter = {
      name: 'counting',
      count: (t) => {
        calls++;
        return words.count(t);
      },
    };
    const md = para('w', 20_000);
    const chunks = chunkMarkdown(md, { maxTokens: 500, counter: counting });
    expect(chunks).toHaveLength(40);
    expect(calls).toBeLessThan(20_000 * 2 + 100);
  });
});

describe('chunkMarkdownWithSplitter', () => {
  it('gives each section to the splitter and keeps heading paths; bare headings ride along', async () => {
    const calls: string[] = [];
    const splitter = {
      splitText: async (text: string) => {
        calls.push(text);
        return text.split(/(?<=\.)\s+/);
      },
    };
    const md = '# Doc\n\n## A\n\n### A1\n\nOne. Two.\n\n## B\n\nThree.';
    const chunks = await chunkMarkdownWithSplitter(md, splitter, { counter: words });
    expect(calls).toEqual(['# Doc\n\n## A\n\n### A1\n\nOne. Two.', '## B\n\nThree.']);
    expect(chunks.map((c) => [c.headingPath, c.text])).toEqual([
      [['Doc', 'A', 'A1'], '# Doc\n\n## A\n\n### A1\n\nOne.'],
      [['Doc', 'A', 'A1'], 'Two.'],
      [['Doc', 'B'], '## B\n\nThree.'],
    ]);
  });
});

describe('prepareDocument', () => {
  const provenance = {
    url: 'https://widgetlib.example.org/en/stable/config.html',
    finalUrl: 'https://widgetlib.example.org/en/stable/config.html',
    title: 'Configuration',
    retrievedAt: '2026-11-30T00:00:00.000Z',
    contentChangedAt: '2026-11-30T00:00:00.000Z',
    acquisition: 'raw' as const,
  };
  const markdown = extractPage(fixture('sphinx.html')).markdown;
  const prepared = prepareDocument({
    documentId: 'docs:abc',
    sourceId: 'docs',
    markdown,
    provenance,
    chunking: { maxTokens: 60, minTokens: 10 },
  });

  it('builds core chunks with deterministic ids from core identity', () => {
    expect(prepared.versionId).toMatch(/^v[0-9a-f]{24}$/);
    expect(prepared.versions).toEqual({
      extractor: EXTRACTOR_VERSION,
      chunker: `${CHUNKER_VERSION}+tiktoken:cl100k_base`,
      schema: '1',
    });
    prepared.chunks.forEach((c, i) => {
      expect(c.chunkId).toBe(chunkId('docs:abc', prepared.versionId, i));
      expect(c.ordinal).toBe(i);
      expect(c.contentHash).toMatch(/^[0-9a-f]{64}$/);
      expect(c.provenance).toEqual(provenance);
    });
    expect(prepared.chunks.length).toBeGreaterThan(1);
    expect(prepared.textChars).toBe(prepared.text.length);
  });

  it('same input gives the same versionId; a different cut gives another', () => {
    const again = prepareDocument({
      documentId: 'docs:abc',
      sourceId: 'docs',
      markdown,
      provenance: { ...provenance, retrievedAt: '2027-01-01T00:00:00.000Z' },
      chunking: { maxTokens: 60, minTokens: 10 },
    });
    expect(again.versionId).toBe(prepared.versionId);
    const recut = prepareDocument({
      documentId: 'docs:abc',
      sourceId: 'docs',
      markdown,
      provenance,
      chunking: { maxTokens: 20, minTokens: 5 },
    });
    expect(recut.versionId).not.toBe(prepared.versionId);
    expect(recut.contentHash).toBe(prepared.contentHash);
  });
});
