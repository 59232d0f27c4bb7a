/**
 * The sim's mutable model of its sites: per-host runtime (listener, robots, host-wide faults)
 * and per-path state (content revision, faults, modifiers, request counts), and how content
 * mutations change a page's text.
 */
import type { Server } from 'node:http';
import { type ContentGenerator, type ContentState, PRISTINE, type Site } from './content.js';
import { invalid } from './errors.js';
import { type Fault, type Modifiers, noMods } from './faults.js';
import type { MutationKind, MutationOptions, RobotsSpec } from './types.js';

export interface HostRuntime {
  readonly site: Site;
  readonly server: Server;
  readonly port: number;
  readonly origin: string;
  inFlight: number;
  robots: RobotsSpec;
  fault: Fault | undefined;
  mods: Modifiers;
}

export interface PathState {
  content: ContentState;
  contentModified: number | undefined;
  /** Bumped on every content change; part of the render cache key. */
  stamp: number;
  fault: Fault | undefined;
  mods: Modifiers;
  served: number;
  churned: number;
}

/** Path state by host and path, created on first touch. */
export class PathStates {
  readonly #states = new Map<string, PathState>();

  get(hostIndex: number, path: string): PathState {
    const key = `${hostIndex} ${path}`;
    let s = this.#states.get(key);
    if (s === undefined) {
      s = {
        content: PRISTINE,
        contentModified: undefined,
        stamp: 0,
        fault: undefined,
        mods: noMods(),
        served: 0,
        churned: 0,
      };
      this.#states.set(key, s);
    }
    return s;
  }

  /** The state, without creating one for a path nobody touched. */
  peek(hostIndex: number, path: string): PathState | undefined {
    return this.#states.get(`${hostIndex} ${path}`);
  }

  clear(): void {
    this.#states.clear();
  }
}

/** Path the twin of a page is served at: `/a/b` -> `/a/b.md`, `/a/` -> `/a/index.md`. */
export function twinPath(path: string): string {
  return path.endsWith('/') ? `${path}index.md` : `${path}.md`;
}

/**
 * The page text after an `edit`, a `shrink` or a content `restore`, or undefined when the
 * mutation changes nothing (a restore of a pristine page).
 */
export function mutatedContent(
  gen: ContentGenerator,
  hostIndex: number,
  pageIndex: number,
  c: ContentState,
  kind: MutationKind,
  opts: MutationOptions,
): ContentState | undefined {
  if (kind === 'edit') {
    const page = gen.page(hostIndex, pageIndex, c);
    const section = opts.section ?? 0;
    if (!Number.isInteger(section) || section < 0 || section >= page.sections.length) {
      throw invalid(
        `edit: section ${section} does not exist; the page has ${page.sections.length} sections now`,
      );
    }
    const revision = c.revision + 1;
    const edited = new Map(c.edited).set(section, revision);
    const appended = new Map(c.appended);
    if (opts.text !== undefined) appended.set(section, opts.text);
    return { revision, edited, appended, keepSections: c.keepSections };
  }
  if (kind === 'shrink') {
    const keep = opts.keepSections ?? 1;
    if (!Number.isInteger(keep) || keep < 0)
      throw invalid(`shrink: keepSections must be an integer >= 0, got ${keep}`);
    return { ...c, revision: c.revision + 1, keepSections: keep };
  }
  if (c.edited.size === 0 && c.keepSections === undefined) return undefined;
  // The revision keeps counting, so an edit after a restore is new text, never an old one.
  return {
    revision: c.revision + 1,
    edited: new Map(),
    appended: new Map(),
    keepSections: undefined,
  };
}
