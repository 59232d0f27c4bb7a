/** Public types of `@ragfresh/sim`. */

/** How a host's pages are marked up and addressed; chosen per host from the seed. */
export type SiteFlavor = 'sphinx' | 'docusaurus' | 'mkdocs';

/** A robots.txt for one host: raw text, or structured rules rendered for `User-agent: *`. */
export type RobotsSpec =
  | string
  | {
      readonly userAgent?: string;
      readonly allow?: readonly string[];
      readonly disallow?: readonly string[];
      /** Seconds; rendered as `Crawl-delay`. */
      readonly crawlDelay?: number;
      /** Extra groups appended verbatim (for per-bot rules). */
      readonly extra?: string;
      /** Whether to add a `Sitemap:` line (default true). */
      readonly sitemap?: boolean;
    };

export interface SimWebOptions {
  /** Everything generated derives from it (default 1). */
  readonly seed?: number;
  /** Number of virtual hosts, each on its own 127.0.0.1 port (default 3). */
  readonly hosts?: number;
  /** Pages per host including the home page (default 20, minimum 1). */
  readonly pagesPerHost?: number;
  /**
   * First port: host i listens on `port + i`. Default 0: every host gets an ephemeral port.
   * Use a fixed port when byte-identical bodies across runs matter (canonical links, sitemaps
   * and robots.txt hold absolute URLs; page bodies otherwise use root-relative links).
   */
  readonly port?: number;
  /** robots.txt per host; a function receives the host name and index. Default: see README. */
  readonly robots?: RobotsSpec | ((host: string, index: number) => RobotsSpec);
  /** Serve `<page>.md` Markdown twins and list them in llms.txt (default true). */
  readonly markdownTwins?: boolean;
  /** Keep at most this many log entries; oldest are dropped (default 100,000). */
  readonly logLimit?: number;
  /** Rendered bodies kept in memory (default 5,000). */
  readonly cacheSize?: number;
}

/** One request as the sim saw it. Times are ms since the Unix epoch, sub-ms resolution. */
export interface RequestLogEntry {
  /** 1-based order of arrival across all hosts. */
  readonly seq: number;
  /** Arrival time (`performance.timeOrigin + performance.now()`). */
  readonly time: number;
  /** When the response finished (or the socket closed); undefined while in flight. */
  readonly endTime: number | undefined;
  readonly host: string;
  readonly origin: string;
  readonly method: string;
  /** Path plus query string, as requested. */
  readonly path: string;
  /** Absolute URL (origin + path). */
  readonly url: string;
  /** Lower-cased request header names; repeated headers joined with ', '. */
  readonly headers: Readonly<Record<string, string>>;
  /** Response status; 0 while headers have not been sent yet (slow responses). */
  readonly status: number;
  /** Requests in flight on this host when this one arrived, including itself. */
  readonly concurrent: number;
  /** Id of the TCP connection (1-based, unique across hosts): equal ids mean a reused connection. */
  readonly connection: number;
  /** Body bytes written on the wire (after compression). */
  readonly bytes: number;
  /** Content-Encoding of the response, if any. */
  readonly encoding: string | undefined;
}

/**
 * Charset trouble served by `wrongCharset`:
 * - `header`: `Content-Type: text/html; charset=ISO-8859-1` over a UTF-8 body whose
 *   `<meta charset="utf-8">` tells the truth (the header wins in browsers: mojibake).
 * - `meta-only`: UTF-8 body, `Content-Type: text/html` with no charset; only `<meta>` says utf-8.
 * - `latin1`: the body really is ISO-8859-1 (`é` is one byte), declared in header and `<meta>`.
 * - `latin1-meta-only`: ISO-8859-1 body declared only by `<meta charset="iso-8859-1">`.
 */
export type CharsetVariant = 'header' | 'meta-only' | 'latin1' | 'latin1-meta-only';

export type MutationKind =
  | 'edit'
  | 'shrink'
  | 'delete404'
  | 'delete410'
  | 'outage'
  | 'rateLimit'
  | 'consentWall'
  | 'challenge'
  | 'loginRedirect'
  | 'offHostRedirect'
  | 'soft404'
  | 'appShell'
  | 'timestampChurn'
  | 'slow'
  | 'wrongCharset'
  | 'gzipBomb'
  | 'restore';

/** Options of `mutate`; each kind reads the fields documented for it and ignores the rest. */
export interface MutationOptions {
  /** edit: index into `pageFacts(url).sections` whose paragraph changes (default 0). */
  readonly section?: number;
  /** edit: extra sentence appended to the edited paragraph (kept verbatim, escaped). */
  readonly text?: string;
  /** shrink: how many H2 sections to keep (default 1). */
  readonly keepSections?: number;
  /** outage (default 120), rateLimit (default 30): Retry-After seconds; null omits the header. */
  readonly retryAfter?: number | null;
  /**
   * Faults (outage, rateLimit, challenge, consentWall, soft404, appShell, loginRedirect,
   * offHostRedirect, delete404, delete410, gzipBomb): serve the fault this many times, then
   * go back to normal on its own. Default: until `restore`.
   */
  readonly times?: number;
  /** challenge: status code (default 200; real challenges also use 403 and 503). */
  readonly status?: number;
  /** offHostRedirect: Location (default: the home page of the next host). */
  readonly location?: string;
  /** appShell: whether the bundle renders the article client-side (default true). */
  readonly clientRender?: boolean;
  /** slow: delay before the status line and headers (default 0). */
  readonly headerDelayMs?: number;
  /** slow: delay between body chunks (default 0). */
  readonly chunkDelayMs?: number;
  /** slow: body chunk size in bytes (default 1024). */
  readonly chunkSize?: number;
  /** wrongCharset: which charset trouble to serve (default `header`); see `CharsetVariant`. */
  readonly charset?: CharsetVariant;
  /** gzipBomb: inflated size in bytes (default 128 MiB). */
  readonly inflatedBytes?: number;
  /** restore: also undo edits and shrinks, back to the generated content (default false). */
  readonly content?: boolean;
}

/** A mutation applied later: when the logical clock reaches `atTick`, or after N requests. */
export interface ScheduledMutation {
  readonly url: string;
  readonly kind: MutationKind;
  readonly opts?: MutationOptions;
  /** Apply when `advance()` moves the clock to this tick or beyond. */
  readonly atTick?: number;
  /** Apply once this many requests for the URL's path have been answered (the next one sees it). */
  readonly afterRequests?: number;
}

export interface SectionFact {
  /** Heading text as shown (without the anchor sign). */
  readonly heading: string;
  /** Fragment id of the heading (`#anchor`). */
  readonly anchor: string;
  readonly level: 2 | 3;
  /** Phrase found only in this section's text, on this sim (two words, one of them coined). */
  readonly phrase: string;
}

/** What a page currently says, for retrieval tests. Reflects edits and shrinks. */
export interface PageFacts {
  readonly url: string;
  readonly host: string;
  readonly path: string;
  readonly title: string;
  /** Phrase found only in this page's introduction. */
  readonly phrase: string;
  readonly sections: readonly SectionFact[];
  /** 0 for generated content; +1 per edit, shrink or content restore (never decreases). */
  readonly revision: number;
  /** Last-Modified of the current content (ISO 8601). */
  readonly lastModified: string;
  /** URL of the Markdown twin, when twins are enabled. */
  readonly markdownUrl: string | undefined;
}

export interface SimHostInfo {
  readonly name: string;
  readonly index: number;
  readonly origin: string;
  readonly port: number;
  readonly flavor: SiteFlavor;
  readonly siteTitle: string;
  readonly domain: string;
}
