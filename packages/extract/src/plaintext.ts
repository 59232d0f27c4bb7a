import { FenceScanner } from './fence.js';

/**
 * Plain text of ragfresh Markdown: link text without targets, no images, no autolinks, no
 * fence or emphasis markers, `\X` escapes undone. Used for scoring and for hashing views
 * where markup must not count; code lines are kept verbatim.
 */
export function markdownToPlainText(markdown: string): string {
  const out: string[] = [];
  const fences = new FenceScanner();
  for (const line of markdown.split('\n')) {
    const role = fences.next(line);
    if (role === 'code') out.push(line);
    else if (role === 'text') out.push(inlineToText(line));
  }
  return out.join('\n');
}

function inlineToText(line: string): string {
  let s = line;
  s = s.replace(/^\s{0,3}#{1,6}\s+/, '');
  s = s.replace(/!\[(?:[^\]\\]|\\.)*\]\((?:[^()\s]|\([^()]*\))*(?:\s+"[^"]*")?\)/g, '');
  s = s.replace(/\[((?:[^\]\\]|\\.)*)\]\((?:[^()\s]|\([^()]*\))*(?:\s+"[^"]*")?\)/g, '$1');
  s = s.replace(/<(?:https?|mailto|ftp):[^>\s]*>/g, '');
  s = s.replace(/(?<!\\)(?:\*+|~+)/g, '');
  s = s.replace(/(?<!\\)`+/g, '');
  s = s.replace(/\\([!-/:-@[-`{-~])/g, '$1');
  return s;
}
