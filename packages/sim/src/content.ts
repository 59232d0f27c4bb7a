/**
 * The generated content model: sites (one per host) and pages as small block trees, built
 * lazily from the seed. Rendering to HTML / Markdown lives in `render.ts`.
 */
import { Coiner, Rng } from './random.js';
import type { SiteFlavor } from './types.js';
import {
  ADJECTIVES,
  CONNECTORS,
  DOMAINS,
  type Domain,
  PRODUCT_PREFIXES,
  PRODUCT_SUFFIXES,
  SECTION_HEADINGS,
  SECTIONS,
  SUB_HEADINGS,
  SUBJECTS,
  TITLE_PATTERNS,
  UNICODE_ASIDES,
} from './words.js';

export type Inline =
  | string
  | { readonly code: string }
  | { readonly link: string; readonly text: string }
  | { readonly strong: string };

export type Block =
  | { readonly kind: 'p'; readonly parts: readonly Inline[] }
  | { readonly kind: 'code'; readonly lang: string; readonly code: string }
  | {
      readonly kind: 'list';
      readonly ordered: boolean;
      readonly items: readonly (readonly Inline[])[];
    }
  | {
      readonly kind: 'table';
      readonly head: readonly string[];
      readonly rows: readonly (readonly string[])[];
    };

export interface Section {
  readonly heading: string;
  readonly anchor: string;
  readonly level: 2 | 3;
  readonly phrase: string;
  readonly blocks: readonly Block[];
}

export interface PageSpec {
  readonly index: number;
  readonly path: string;
  readonly title: string;
  readonly slug: string;
  /** Index into `Site.sections`; -1 for the home page. */
  readonly section: number;
}

export interface Page {
  readonly spec: PageSpec;
  readonly description: string;
  readonly phrase: string;
  readonly intro: readonly Block[];
  /** H2 and H3 sections in document order. */
  readonly sections: readonly Section[];
  /** Generated last-modified time of revision 0 (ms). */
  readonly baseModified: number;
}

export interface Site {
  readonly index: number;
  readonly name: string;
  readonly flavor: SiteFlavor;
  readonly domain: Domain;
  readonly product: string;
  readonly title: string;
  readonly sections: readonly string[];
  readonly pages: readonly PageSpec[];
  readonly byPath: ReadonlyMap<string, PageSpec>;
}

/** Content edits applied to a page; revision 0 with no edits is the generated page. */
export interface ContentState {
  readonly revision: number;
  /** Section index -> revision that last edited it. */
  readonly edited: ReadonlyMap<number, number>;
  /** Section index -> verbatim sentence appended by an edit. */
  readonly appended: ReadonlyMap<number, string>;
  /** Number of H2 sections kept, or undefined for all. */
  readonly keepSections: number | undefined;
}

export const PRISTINE: ContentState = {
  revision: 0,
  edited: new Map(),
  appended: new Map(),
  keepSections: undefined,
};

const FLAVORS: readonly SiteFlavor[] = ['sphinx', 'docusaurus', 'mkdocs'];
const DAY = 86_400_000;
/** Sim epoch: every generated date is before it, and the logical clock starts from it. */
export function baseTime(seed: number): number {
  return Date.UTC(2025, 0, 1) + (Math.abs(Math.trunc(seed)) % 360) * DAY;
}

const MAX_SECTION_SLOTS = 15;
/** Edits of one section past this many reuse earlier phrases (ids must stay below 70^5). */
const MAX_REVISIONS = 1024;
/** Largest hosts x pagesPerHost for which every phrase is unique. */
export const MAX_TOTAL_PAGES = 100_000;

export class ContentGenerator {
  readonly seed: number;
  readonly pagesPerHost: number;
  private readonly coiner: Coiner;
  private readonly sites = new Map<number, Site>();

  constructor(seed: number, pagesPerHost: number) {
    this.seed = seed;
    this.pagesPerHost = pagesPerHost;
    this.coiner = new Coiner(seed);
  }

  /** Unique word for (host, page, slot, revision); slot 0 is the intro, 1.. are sections. */
  coined(host: number, page: number, slot: number, revision: number): string {
    const global = host * this.pagesPerHost + page;
    return this.coiner.coin(
      (global * (MAX_SECTION_SLOTS + 1) + slot) * MAX_REVISIONS + (revision % MAX_REVISIONS),
    );
  }

  site(index: number): Site {
    let site = this.sites.get(index);
    if (site === undefined) {
      site = this.buildSite(index);
      this.sites.set(index, site);
    }
    return site;
  }

  private buildSite(index: number): Site {
    const rng = Rng.from(this.seed, 'site', index);
    const flavor = FLAVORS[(index + Math.abs(this.seed)) % FLAVORS.length] as SiteFlavor;
    const domain = rng.pick(DOMAINS);
    const product = rng.pick(PRODUCT_PREFIXES) + rng.pick(PRODUCT_SUFFIXES);
    const sections = rng.shuffle(SECTIONS).slice(0, rng.int(3, SECTIONS.length));
    const pages: PageSpec[] = [];
    const byPath = new Map<string, PageSpec>();
    const used = new Set<string>();
    const home: PageSpec = {
      index: 0,
      path: '/',
      title: `${product} documentation`,
      slug: 'index',
      section: -1,
    };
    pages.push(home);
    byPath.set('/', home);
    for (let i = 1; i < this.pagesPerHost; i++) {
      const prng = Rng.from(this.seed, 'page-spec', index, i);
      const section = (i - 1) % sections.length;
      let title = titleFrom(prng, domain);
      let slug = slugify(title);
      for (let n = 2; used.has(`${section}/${slug}`); n++) {
        title = `${titleFrom(prng, domain)} (${n})`;
        slug = slugify(title);
      }
      used.add(`${section}/${slug}`);
      const path = pagePath(flavor, slugify(sections[section] as string), slug);
      const spec: PageSpec = { index: i, path, title, slug, section };
      pages.push(spec);
      byPath.set(path, spec);
    }
    return {
      index,
      name: `docs-${index}`,
      flavor,
      domain,
      product,
      title: `${product} Docs`,
      sections,
      pages,
      byPath,
    };
  }

  /** Builds a page in its current content state. Cheap enough to call per cache miss. */
  page(siteIndex: number, pageIndex: number, state: ContentState = PRISTINE): Page {
    const site = this.site(siteIndex);
    const spec = site.pages[pageIndex];
    if (spec === undefined) throw new RangeError(`no page ${pageIndex} on host ${siteIndex}`);
    const rng = Rng.from(this.seed, 'page', siteIndex, pageIndex);
    const words = new Prose(rng, site);
    const dom = site.domain;
    const focus = rng.pick(dom.nouns);
    const phrase = `${this.coined(siteIndex, pageIndex, 0, 0)} ${focus}`;
    const intro: Block[] = [
      {
        kind: 'p',
        parts: [
          `The ${phrase} is how ${rng.pick(SUBJECTS)} keeps every ${rng.pick(dom.nouns)} in step. `,
          words.sentence(),
          ' ',
          words.sentence(),
        ],
      },
      {
        kind: 'p',
        parts: [words.sentence(), ' ', words.sentence(), ' ', ...this.crossLink(rng, site, spec)],
      },
    ];
    const sections: Section[] = [];
    const h2Count = pageIndex === 0 ? 3 : rng.int(2, 5);
    const headings = rng.shuffle(SECTION_HEADINGS);
    const usedAnchors = new Set<string>([slugify(spec.title)]);
    let slot = 0;
    for (let h = 0; h < h2Count && slot < MAX_SECTION_SLOTS; h++) {
      if (state.keepSections !== undefined && h >= state.keepSections) break;
      const heading = headings[h % headings.length] as string;
      sections.push(
        this.section(
          siteIndex,
          pageIndex,
          slot,
          2,
          heading,
          usedAnchors,
          state,
          site,
          pageIndex === 0 && h === 0,
        ),
      );
      slot++;
      if (rng.chance(0.5) && slot < MAX_SECTION_SLOTS) {
        const sub = rng.pick(SUB_HEADINGS);
        sections.push(
          this.section(siteIndex, pageIndex, slot, 3, sub, usedAnchors, state, site, false),
        );
        slot++;
      }
    }
    const baseModified = this.baseModified(siteIndex, pageIndex);
    return {
      spec,
      description: `${spec.title}: how ${site.product} handles the ${focus} and related settings.`,
      phrase,
      intro,
      sections,
      baseModified,
    };
  }

  /** Generated Last-Modified of a page's revision 0, without building the page. */
  baseModified(siteIndex: number, pageIndex: number): number {
    const rng = Rng.from(this.seed, 'modified', siteIndex, pageIndex);
    return baseTime(this.seed) - rng.int(2, 700) * DAY - rng.int(0, 86_399) * 1000;
  }

  private section(
    siteIndex: number,
    pageIndex: number,
    slot: number,
    level: 2 | 3,
    heading: string,
    usedAnchors: Set<string>,
    state: ContentState,
    site: Site,
    homeLinks: boolean,
  ): Section {
    const revision = state.edited.get(slot) ?? 0;
    // The section's shape is fixed; only the first paragraph is regenerated by an edit.
    const rng = Rng.from(this.seed, 'section', siteIndex, pageIndex, slot);
    const textRng = Rng.from(this.seed, 'section-text', siteIndex, pageIndex, slot, revision);
    const words = new Prose(rng, site);
    const edited = new Prose(textRng, site);
    const dom = site.domain;
    const noun = textRng.pick(dom.nouns);
    const phrase = `${this.coined(siteIndex, pageIndex, slot + 1, revision)} ${noun}`;
    let anchor = slugify(heading);
    for (let n = 1; usedAnchors.has(anchor); n++) anchor = `${slugify(heading)}-${n}`;
    usedAnchors.add(anchor);
    const first: Inline[] = [
      edited.sentence(),
      ' ',
      `In this section, the ${phrase} is the part that ${textRng.pick(SUBJECTS)} relies on most. `,
      edited.sentence(),
    ];
    const extra = state.appended.get(slot);
    if (extra !== undefined) first.push(' ', extra);
    const blocks: Block[] = [{ kind: 'p', parts: first }];
    if (homeLinks) {
      blocks.push({
        kind: 'list',
        ordered: false,
        items: site.sections.map((name, i) => {
          const target = site.pages.find((p) => p.section === i);
          return target === undefined
            ? [name]
            : [{ link: target.path, text: name }, ` — ${words.clause()}.`];
        }),
      });
    }
    const extras = rng
      .shuffle(['code', 'list', 'table', 'p', 'code-shell'])
      .slice(0, rng.int(1, 3));
    for (const kind of extras) {
      if (kind === 'p')
        blocks.push({ kind: 'p', parts: [words.sentence(), ' ', words.sentence()] });
      else if (kind === 'code') blocks.push(words.pythonBlock());
      else if (kind === 'code-shell') blocks.push(words.shellBlock());
      else if (kind === 'list') blocks.push(words.list());
      else blocks.push(words.table());
    }
    return { heading, anchor, level, phrase, blocks };
  }

  private crossLink(rng: Rng, site: Site, spec: PageSpec): Inline[] {
    if (site.pages.length < 2) return [];
    let target = site.pages[rng.int(1, site.pages.length - 1)] as PageSpec;
    if (target.index === spec.index) target = site.pages[0] as PageSpec;
    return ['See ', { link: target.path, text: target.title }, ' for related settings.'];
  }
}

/** Readable sentences from a seeded generator and one site's vocabulary. */
class Prose {
  constructor(
    private readonly rng: Rng,
    private readonly site: Site,
  ) {}

  private noun(): string {
    return this.rng.pick(this.site.domain.nouns);
  }
  private verb(): string {
    return this.rng.pick(this.site.domain.verbs);
  }
  private adj(): string {
    return this.rng.pick(ADJECTIVES);
  }
  private option(): string {
    return this.rng.pick(this.site.domain.options);
  }

  clause(): string {
    const r = this.rng;
    return r.pick([
      `how to ${this.verb()} ${article(this.noun())}`,
      `everything about the ${this.adj()} ${this.noun()}`,
      `when to ${this.verb()} ${plural(this.noun())}`,
    ]);
  }

  sentence(): string {
    const r = this.rng;
    const n = r.int(2, 40);
    switch (r.int(0, 11)) {
      case 0:
        return cap(
          `${r.pick(SUBJECTS)} ${third(this.verb())} the ${this.noun()} ${r.pick(CONNECTORS)} it ${third(this.verb())} any ${this.adj()} ${this.noun()}.`,
        );
      case 1:
        return `Use the ${this.option()} option to ${this.verb()} ${plural(this.noun())} that are ${this.adj()}.`;
      case 2:
        return `By default, each ${this.noun()} is ${this.adj()}, so you rarely need to ${this.verb()} it by hand.`;
      case 3:
        return `If the ${this.noun()} is ${this.adj()}, ${r.pick(SUBJECTS)} will ${this.verb()} the ${this.noun()} automatically.`;
      case 4:
        return `You can ${this.verb()} ${article(this.noun())} from the dashboard, the API or the command line.`;
      case 5:
        return `${cap(plural(this.noun()))} created before version ${r.int(1, 4)}.${r.int(0, 9)} are not ${this.adj()} — ${this.verb()} them again to upgrade.`;
      case 6:
        return `Think of ${r.pick(UNICODE_ASIDES)}: the ${this.noun()} is checked once per request, not once per ${this.noun()}.`;
      case 7:
        return `This keeps the ${this.noun()} consistent with the ${this.noun()}, even under heavy load.`;
      case 8:
        return `For ${this.adj()} workloads, set ${this.option()} to ${n} and ${this.verb()} each ${this.noun()} in batches.`;
      case 9:
        return `The ${this.noun()} is stored separately from the ${this.noun()}; removing one does not ${this.verb()} the other.`;
      case 10:
        return `Most teams ${this.verb()} their ${plural(this.noun())} nightly and keep the ${this.noun()} ${this.adj()}.`;
      default:
        return `Consider ${r.pick(UNICODE_ASIDES)} when ${article(this.noun())} grows beyond ${n * 1000} entries…`;
    }
  }

  pythonBlock(): Block {
    const pkg = this.site.product.toLowerCase();
    const noun = ident(this.noun());
    const verb = ident(this.verb());
    const code = [
      `# ${cap(this.verb())} every ${this.adj()} ${this.noun()}`,
      `from ${pkg} import Client`,
      '',
      `client = Client(api_key="sk_test_${this.rng.int(1000, 9999)}")`,
      `# ${this.option()} defaults to ${this.rng.int(1, 64)}`,
      `for item in client.${noun}s.list(${this.option()}=${this.rng.int(1, 500)}):`,
      `    client.${noun}s.${verb}(item.id)  # one call per ${this.noun()}`,
    ].join('\n');
    return { kind: 'code', lang: 'python', code };
  }

  shellBlock(): Block {
    const pkg = this.site.product.toLowerCase();
    const code = [
      '# install the command-line tool',
      `pip install ${pkg}-cli==${this.rng.int(1, 4)}.${this.rng.int(0, 12)}.${this.rng.int(0, 9)}`,
      `# ${this.verb()} ${article(this.noun())}`,
      `${pkg} ${ident(this.noun())} ${ident(this.verb())} --${this.option().replaceAll('_', '-')}=${this.rng.int(1, 99)}`,
    ].join('\n');
    return { kind: 'code', lang: 'bash', code };
  }

  list(): Block {
    const ordered = this.rng.chance(0.5);
    const items: Inline[][] = [];
    const count = this.rng.int(3, 5);
    for (let i = 0; i < count; i++) {
      if (ordered)
        items.push([
          `${cap(this.verb())} the ${this.noun()} and check the `,
          { code: this.option() },
          ' value.',
        ]);
      else items.push([{ strong: cap(this.noun()) }, `: ${this.clause()}.`]);
    }
    return { kind: 'list', ordered, items };
  }

  table(): Block {
    const options = this.rng.shuffle(this.site.domain.options).slice(0, this.rng.int(3, 5));
    const rows = options.map((name) => [
      name,
      this.rng.pick(['integer', 'string', 'boolean', 'duration']),
      String(this.rng.int(0, 600)),
      cap(`${this.clause()}.`),
    ]);
    return { kind: 'table', head: ['Option', 'Type', 'Default', 'Description'], rows };
  }
}

function titleFrom(rng: Rng, domain: Domain): string {
  const pattern = rng.pick(TITLE_PATTERNS);
  const noun = rng.pick(domain.nouns);
  const verb = rng.pick(domain.verbs);
  const title = pattern
    .replace('{Verb}', cap(verb))
    .replace('{a-noun}', article(noun))
    .replace('{noun}s', plural(noun))
    .replace('{noun}', noun)
    .replace('{Noun}', cap(noun));
  return cap(title);
}

function pagePath(flavor: SiteFlavor, section: string, slug: string): string {
  switch (flavor) {
    case 'sphinx':
      return `/en/latest/${section}/${slug}.html`;
    case 'docusaurus':
      return `/docs/${section}/${slug}`;
    case 'mkdocs':
      return `/${section}/${slug}/`;
  }
}

export function slugify(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function ident(text: string): string {
  return text.replace(/[^a-zA-Z0-9]+/g, '_').toLowerCase();
}

export function article(noun: string): string {
  return /^[aeiou]/i.test(noun) ? `an ${noun}` : `a ${noun}`;
}

function plural(noun: string): string {
  if (/(s|x|z|ch|sh)$/.test(noun)) return `${noun}es`;
  if (/[^aeiou]y$/.test(noun)) return `${noun.slice(0, -1)}ies`;
  return `${noun}s`;
}

function third(verb: string): string {
  return plural(verb);
}
