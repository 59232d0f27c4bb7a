const FENCE = /^\s{0,3}(`{3,}|~{3,})/;

/**
 * Plain text of ragfresh Markdown: link text without targets, no images, no autolinks, no
 * fence or emphasis markers, `\X` escapes undone. Used for scoring and for hashing views
 * where markup must not count; code lines are kept verbatim.
 */
export function markdownToPlainText(markdown: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const m = FENCE.exec(line);
    if (fence !== undefined) {
      if (
        m?.[1] !== undefined &&
        m[1][0] === fence[0] &&
        m[1].length >= fence.length &&
        line.trim() === m[1]
      ) {
        fence = undefined;
        continue;
      }
      out.push(line);
      continue;
    }
    if (m?.[1] !== undefined) {
      fence = m[1];
      continue;
    }
    out.push(inlineToText(line));
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
