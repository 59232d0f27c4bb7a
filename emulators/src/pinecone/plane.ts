// One index's data plane: namespaces as a write log with one LSN counter and one materialised
// view per read path, each catching up with the log after its own lag, in log order.
import type { Faults } from '../server.js';
import { Reply } from '../server.js';
import {
  type Index,
  invalid,
  type Namespace,
  PINECONE_LIMITS,
  type PineconeEmulatorOptions,
  type PineconeLags,
  type ReadPath,
  rpc,
  type Store,
} from './wire.js';

/** Emulator-wide behaviour every index's data plane follows. */
export interface PlaneSettings {
  readonly local: boolean;
  readonly updateByFilter: NonNullable<PineconeEmulatorOptions['updateByFilter']>;
  readonly lsnHeaders: boolean;
  readonly lags: PineconeEmulatorOptions['lags'];
  readonly maxNamespaces: number | undefined;
  readonly faults: Faults;
}

export class IndexPlane {
  constructor(
    readonly ix: Index,
    readonly settings: PlaneSettings,
  ) {}

  readonly nsName = (name: unknown): string =>
    typeof name === 'string' && name !== '' ? name : '__default__';

  lagsOf(name: string): Required<PineconeLags> {
    const base = this.settings.faults.visibilityLagMs;
    if (this.settings.local) return { fetchMs: 0, listMs: 0, queryMs: 0 };
    const lags = this.settings.lags;
    const l = typeof lags === 'function' ? lags(name) : (lags ?? {});
    return {
      fetchMs: l.fetchMs ?? base,
      listMs: l.listMs ?? base,
      queryMs: l.queryMs ?? base,
    };
  }

  space(name: unknown, create: boolean): Namespace {
    const key = this.nsName(name);
    const max = this.settings.maxNamespaces;
    let n = this.ix.namespaces.get(key);
    if (!n) {
      if (create && max !== undefined && this.ix.namespaces.size >= max) {
        // Object limits page: "API operations return a 403 - QUOTA_EXCEEDED".
        throw rpc(
          403,
          7,
          `QUOTA_EXCEEDED: Namespace quota exceeded: the index already has ${this.ix.namespaces.size} namespaces, the limit is ${max}`,
        );
      }
      n = {
        lsn: 0,
        log: [],
        views: {
          fetch: { store: new Map(), applied: 0 },
          list: { store: new Map(), applied: 0 },
          query: { store: new Map(), applied: 0 },
        },
      };
      if (create) this.ix.namespaces.set(key, n);
    }
    return n;
  }

  /** The namespace as one read path sees it now: its view caught up to what its lag allows. */
  view(name: unknown, path: ReadPath): { store: Store; applied: number } {
    const n = this.space(name, false);
    const lag = this.lagsOf(this.nsName(name))[`${path}Ms`];
    const v = n.views[path];
    const now = Date.now();
    for (const op of n.log) {
      if (op.lsn <= v.applied) continue;
      if (op.at + lag > now) break;
      op.apply(v.store);
      v.applied = op.lsn;
    }
    const done = Math.min(n.views.fetch.applied, n.views.list.applied, n.views.query.applied);
    while (n.log.length > 0 && n.log[0]!.lsn <= done) n.log.shift();
    return v;
  }

  /** Appends a write to the namespace's log; returns its LSN. */
  write(name: unknown, apply: (m: Store) => void): number {
    const n = this.space(name, true);
    n.lsn += 1;
    n.log.push({ lsn: n.lsn, at: Date.now(), apply });
    for (const path of ['fetch', 'list', 'query'] as const) this.view(name, path);
    return n.lsn;
  }

  written(body: unknown, lsn: number): Reply {
    return new Reply(
      200,
      body,
      this.settings.lsnHeaders ? { 'x-pinecone-request-lsn': String(lsn) } : {},
    );
  }

  checkValues(v: unknown, id: string): number[] {
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      throw invalid(`Vector values must be an array of finite numbers (id '${id}')`);
    }
    if (v.length !== this.ix.dimension) {
      throw invalid(
        `Vector dimension ${v.length} does not match the dimension of the index ${this.ix.dimension}`,
      );
    }
    if (this.ix.metric === 'cosine' && v.every((x) => x === 0)) {
      throw invalid(`Dense vectors must contain at least one non-zero value (id '${id}')`);
    }
    return (v as number[]).map((x) => Math.fround(x));
  }

  readonly checkId = (id: unknown): string => {
    if (typeof id !== 'string' || id === '') throw invalid('Vector id must be a non-empty string');
    if (Buffer.byteLength(id) > PINECONE_LIMITS.idLength)
      throw invalid(`Vector id must be at most ${PINECONE_LIMITS.idLength} bytes`);
    return id;
  };
}
