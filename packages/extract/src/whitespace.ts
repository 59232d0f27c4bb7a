/** Every whitespace run one space, trimmed (how rules compare an element's text). */
export function collapseSpace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** JavaScript's `\s` (what `/\s/`, `trim()` and selectors' class matching read as whitespace). */
export function isSpace(c: number): boolean {
  return (
    (c >= 9 && c <= 13) ||
    c === 32 ||
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}
