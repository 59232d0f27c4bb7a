/** Edit distance (Levenshtein) of two strings. */
function levenshtein(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/**
 * The known key a mistyped one most likely meant, for "did you mean" in config errors: a small
 * edit distance (case ignored), else one key a prefix of the other (4+ characters, the longer
 * shared part first). Undefined when nothing is close.
 */
export function suggestKey(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  let best: { name: string; score: number } | undefined;
  for (const name of known) {
    const n = name.toLowerCase();
    const d = levenshtein(lower, n);
    const score =
      d <= Math.max(2, Math.floor(n.length / 3))
        ? d
        : n.length >= 4 && (lower.startsWith(n) || n.startsWith(lower))
          ? 10 + 1 - Math.min(n.length, lower.length) / Math.max(n.length, lower.length)
          : undefined;
    if (score !== undefined && (best === undefined || score < best.score)) best = { name, score };
  }
  return best?.name;
}
