/** Separators sites put between a page's own title and the site's name. */
const SEPARATOR = /\s+(?:[|\u2013\u2014\u00b7\u2022:/»]|-{1,2}|::)\s+/u;

/** Site affixes learned from one host's titles: the parts most of them share. */
export interface TitleAffixes {
  readonly format: 'ragfresh-title-affixes/1';
  /** Trailing parts, each with its leading separator, longest first (" | Docs | Acme"). */
  readonly suffixes: readonly string[];
  /** Leading parts, each with its trailing separator ("Acme Docs: "). */
  readonly prefixes: readonly string[];
}

function splitParts(title: string): { parts: string[]; seps: string[] } {
  const parts: string[] = [];
  const seps: string[] = [];
  let rest = title;
  for (let m = SEPARATOR.exec(rest); m; m = SEPARATOR.exec(rest)) {
    parts.push(rest.slice(0, m.index));
    seps.push(m[0]);
    rest = rest.slice(m.index + m[0].length);
  }
  parts.push(rest);
  return { parts, seps };
}

/**
 * Learns the site affixes of one host from its page titles: the trailing (or leading) runs of
 * separator-delimited parts that at least `minShare` of the titles (and at least `minPages`)
 * share. A title that is only the affix keeps it (the home page).
 */
export function learnTitleAffixes(
  titles: readonly string[],
  options: { readonly minShare?: number; readonly minPages?: number } = {},
): TitleAffixes {
  const need = Math.max(
    options.minPages ?? 3,
    Math.ceil((options.minShare ?? 0.5) * titles.length),
  );
  const suffixCounts = new Map<string, number>();
  const prefixCounts = new Map<string, number>();
  for (const t of titles) {
    const { parts, seps } = splitParts(t.replace(/\s+/g, ' ').trim());
    const seenS = new Set<string>();
    const seenP = new Set<string>();
    for (let i = 1; i < parts.length; i++) {
      let suffix = '';
      for (let j = i; j < parts.length; j++) suffix += seps[j - 1]! + parts[j]!;
      seenS.add(suffix);
      let prefix = '';
      for (let j = 0; j < i; j++) prefix += parts[j]! + seps[j]!;
      seenP.add(prefix);
    }
    for (const s of seenS) suffixCounts.set(s, (suffixCounts.get(s) ?? 0) + 1);
    for (const p of seenP) prefixCounts.set(p, (prefixCounts.get(p) ?? 0) + 1);
  }
  const pick = (counts: Map<string, number>) =>
    [...counts]
      .filter(([, n]) => n >= need)
      .map(([k]) => k)
      .sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
  return {
    format: 'ragfresh-title-affixes/1',
    suffixes: pick(suffixCounts),
    prefixes: pick(prefixCounts),
  };
}

/** Drops the longest learned suffix and prefix from a title; never leaves it empty. */
export function stripTitleAffixes(title: string, affixes: TitleAffixes): string {
  let t = title.replace(/\s+/g, ' ').trim();
  for (const s of affixes.suffixes) {
    if (t.length > s.length && t.endsWith(s)) {
      t = t.slice(0, -s.length).trim();
      break;
    }
  }
  for (const p of affixes.prefixes) {
    if (t.length > p.length && t.startsWith(p)) {
      t = t.slice(p.length).trim();
      break;
    }
  }
  return t;
}

const fold = (s: string) => s.toLowerCase().replace(/\s+/g, ' ').trim();

/**
 * A page title fit to root heading paths, from the page alone: the site name (`og:site_name`)
 * is dropped from either end, and when the title starts with the page's h1 followed by a
 * separator, the h1 is the root.
 */
export function titleRoot(
  title: string,
  page: { readonly siteName?: string | undefined; readonly h1?: string | undefined } = {},
): string {
  const t = title.replace(/\s+/g, ' ').trim();
  const { parts } = splitParts(t);
  if (parts.length < 2) return t;
  const h1 = page.h1 ? fold(page.h1) : '';
  if (h1 !== '' && fold(parts[0]!) === h1) return parts[0]!.trim();
  const site = page.siteName ? fold(page.siteName) : '';
  if (site !== '') {
    if (fold(parts[parts.length - 1]!) === site) return splitBack(t, 1);
    if (fold(parts[0]!) === site) return splitFront(t, 1);
  }
  return t;
}

function splitBack(title: string, n: number): string {
  const { parts, seps } = splitParts(title);
  let out = parts[0]!;
  for (let i = 1; i < parts.length - n; i++) out += seps[i - 1]! + parts[i]!;
  return out.trim();
}

function splitFront(title: string, n: number): string {
  const { parts, seps } = splitParts(title);
  let out = parts[n]!;
  for (let i = n + 1; i < parts.length; i++) out += seps[i - 1]! + parts[i]!;
  return out.trim();
}
