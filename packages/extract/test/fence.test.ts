import { describe, expect, it } from 'vitest';
import { FenceScanner } from '../src/fence.js';
import {
  markdownBlocks,
  markdownToPlainText,
  normalizeMarkdown,
  unlinkUnsafeMarkdown,
} from '../src/index.js';

const roles = (markdown: string) => {
  const fences = new FenceScanner();
  return markdown.split('\n').map((line) => fences.next(line));
};

// Every reader of extracted Markdown (plain text, normalisation, the link allow-list, the
// chunker's blocks, boilerplate blocks, list indentation) decides code the same way. If one of
// these fails, check src/fence.ts first: it is the only place the rule is written.
describe('fenced code (CommonMark rules, one scanner)', () => {
  it('opens on up to three spaces and closes on the same character, at least as long', () => {
    expect(roles('a\n   ```js\ncode\n~~~\n````\n```\nb')).toEqual([
      'text',
      'open',
      'code',
      'code', // tildes do not close a backtick block
      'close', // longer is fine
      'open', // an unclosed block runs to the end
      'code',
    ]);
  });

  it('a backtick line whose info string holds a backtick is inline code, not a fence', () => {
    const md = 'Intro\n\n```js` is inline code\n\n[x](javascript:alert(1)) after';
    expect(roles(md)).toEqual(['text', 'text', 'text', 'text', 'text']);
    // The chunker once looped forever on this line (fence test and paragraph test disagreed).
    expect(markdownBlocks(md).map((b) => b.kind)).toEqual(['text', 'text', 'text']);
    expect(markdownToPlainText(md).split('\n')[2]).toBe('js is inline code');
    // Text after it is text: its unsafe link loses its target.
    expect(unlinkUnsafeMarkdown(md)).toContain('\nx after');
    // Control: tildes take any info string, so the same line with tildes opens a block.
    expect(roles('~~~js` info\ncode')).toEqual(['open', 'code']);
  });

  it('a tab or four spaces before the marker is not a fence', () => {
    for (const indent of ['\t', '    ']) {
      const md = `${indent}\`\`\`\n[x](javascript:void)\n# Heading`;
      expect(roles(md)).toEqual(['text', 'text', 'text']);
      expect(unlinkUnsafeMarkdown(md)).toContain('\nx\n');
      expect(markdownBlocks(md).map((b) => b.kind)).toEqual(['text', 'heading']);
    }
    // Control: three spaces is a fence, and what follows is code.
    const fenced = '   ```\n[x](javascript:void)\n# not a heading\n   ```';
    expect(unlinkUnsafeMarkdown(fenced)).toBe(fenced);
    expect(markdownBlocks(fenced).map((b) => b.kind)).toEqual(['code']);
  });

  it('a fence with an info string inside a block is code, not its end', () => {
    const md = '```\nsample:\n```js\n[x](javascript:void)  \n```\n[y](javascript:void)';
    expect(roles(md)).toEqual(['open', 'code', 'code', 'code', 'close', 'text']);
    // Inside the block the link is shown code; after it, text that loses its target.
    expect(unlinkUnsafeMarkdown(md)).toBe('```\nsample:\n```js\n[x](javascript:void)  \n```\ny');
    // normalizeMarkdown keeps code byte-exact (trailing spaces) and trims text.
    expect(normalizeMarkdown(`${md}  `)).toBe(md);
    expect(markdownBlocks(md).map((b) => b.kind)).toEqual(['code', 'text']);
  });
});
