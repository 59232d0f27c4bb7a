// Server-wide state of the Qdrant emulator: collections and aliases, the write path (WAL order,
// visibility lag, slow writes, replicas), scripted answers, and the answer envelope.

import { parseOrdering } from '../qdrant-replicas.js';
import type { EmulatorRequest } from '../server.js';
import { type Faults, HttpError } from '../server.js';
import {
  body,
  type Collection,
  ignore,
  notFound,
  type QdrantEmulatorOptions,
  type QdrantInjection,
  wrongInput,
} from './wire.js';

export class QdrantState {
  readonly collections = new Map<string, Collection>();
  readonly aliases = new Map<string, string>();
  /** Node serving the current request. */
  node = 0;

  resolve(name: string): Collection {
    const c = this.collections.get(this.aliases.get(name) ?? name);
    if (!c) throw notFound(`Collection \`${name}\` doesn't exist!`);
    c.log.settle();
    c.replicas.active = this.node % c.replicas.count;
    return c;
  }
}

export const WRITE_QUERY = ['wait', 'ordering', 'timeout'];
export const READ_QUERY = ['consistency', 'timeout'];

export function checkQuery(req: EmulatorRequest, allowed: readonly string[]): void {
  // actix's Query extractor ignores unknown parameters like any serde struct without deny.
  for (const key of req.query.keys()) if (!allowed.includes(key)) ignore(`query.${key}`);
  const wait = req.query.get('wait');
  if (wait !== null && wait !== 'true' && wait !== 'false') {
    throw new HttpError(
      400,
      body('Query deserialize error: provided string was not `true` or `false`'),
    );
  }
}

export function atLeast(version: string, floor: readonly [number, number, number]): boolean {
  const v = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version)?.slice(1).map(Number) ?? [0, 0, 0];
  for (let i = 0; i < 3; i++) if (v[i] !== floor[i]) return v[i]! > floor[i]!;
  return true;
}

export function updateResult(operationId: number, waited: boolean) {
  return { operation_id: operationId, status: waited ? 'completed' : 'acknowledged' };
}

export class QdrantServer {
  readonly state = new QdrantState();
  readonly requests = new Map<string, number>();
  readonly ignoredFields: string[] = [];
  readonly injections: Array<QdrantInjection & { left: number }> = [];
  readonly version: string;
  /** `update_mode` arrived in 1.17 (lib/api/src/rest/schema.rs, PointsList.update_mode). */
  readonly knowsUpdateMode: boolean;
  #operationId = 0;
  /** Route of the request being served (`METHOD /template`) and when it started. */
  #route = '';
  #t0 = 0;

  constructor(
    readonly options: QdrantEmulatorOptions,
    readonly faults: Faults,
  ) {
    this.version = options.version ?? '1.19.0';
    this.knowsUpdateMode = atLeast(this.version, [1, 17, 0]);
  }

  /** Starts serving `route`: counts it and answers a scripted status if one is due. */
  begin(route: string): void {
    this.#route = route;
    this.#t0 = Date.now();
    this.requests.set(route, (this.requests.get(route) ?? 0) + 1);
    this.#injectedStatus();
  }

  #take(kind: 'status' | 'slow'): QdrantInjection | undefined {
    const i = this.injections.findIndex(
      (x) =>
        ('status' in x ? kind === 'status' : kind === 'slow') &&
        (x.route === undefined || x.route === this.#route),
    );
    if (i < 0) return undefined;
    const x = this.injections[i]!;
    x.left -= 1;
    if (x.left <= 0) this.injections.splice(i, 1);
    return x;
  }

  #injectedStatus(): void {
    const x = this.#take('status');
    if (x === undefined || !('status' in x)) return;
    if (x.status === 408) throw new HttpError(408, body('Timeout error: operation timed out'));
    if (x.status === 403)
      throw new HttpError(403, body('Forbidden: write operations are forbidden (locked)'));
    throw new HttpError(
      429,
      body('Rate limiting exceeded: Write rate limit exceeded, retry later'),
      x.retryAfterSeconds === undefined ? {} : { 'retry-after': String(x.retryAfterSeconds) },
    );
  }

  /** The `{ result, status, time }` envelope (awaiting a write that answers later). */
  ok(result: unknown): unknown {
    const t0 = this.#t0;
    const wrap = (r: unknown) => ({ result: r, status: 'ok', time: (Date.now() - t0) / 1000 });
    return result instanceof Promise ? result.then(wrap) : wrap(result);
  }

  /** Reads other than retrieve answer from the serving node's replica only. */
  localRead(c: Collection, req: EmulatorRequest): void {
    if (c.replicas.count > 1 && req.query.get('consistency') !== null)
      throw wrongInput('the ragfresh emulator resolves read consistency for retrieve only');
  }

  /** Applies a write now when `wait=true`, else after the injected visibility lag. */
  write(c: Collection, req: EmulatorRequest, run: () => void): unknown {
    const waited = req.query.get('wait') === 'true';
    const ordering = parseOrdering(req.query.get('ordering'));
    if (c.replicas.count > 1) {
      this.#operationId += 1;
      const id = this.#operationId;
      const applied = c.replicas.write(this.state.node, ordering, run);
      return waited ? applied.then(() => updateResult(id, true)) : updateResult(id, false);
    }
    const slow = waited ? this.#take('slow') : undefined;
    this.#operationId += 1;
    if (waited && (slow !== undefined || c.log.pending > 0)) {
      // Accepted into the WAL, applied once the delay passed (and after every write before it,
      // in WAL order); the wait gives up first.
      const delayMs = slow !== undefined && 'slowWriteMs' in slow ? slow.slowWriteMs : 0;
      c.log.apply(delayMs, run);
      c.log.settle();
      if (c.log.pending === 0) return updateResult(this.#operationId, true);
      const timeout = req.query.get('timeout');
      if (timeout !== null) {
        // The server waits up to `timeout` seconds: long enough, and it answers completed (the
        // emulator answers at once, as if it had waited); too short, and wait_timeout.
        if (Number(timeout) * 1000 >= c.log.lastDueAt - Date.now()) {
          c.log.flush();
          return updateResult(this.#operationId, true);
        }
        return { operation_id: this.#operationId, status: 'wait_timeout' };
      }
      throw new HttpError(
        408,
        body('Timeout error: Update operation timed out on 1 out of 1 shards.'),
      );
    }
    c.log.apply(waited ? 0 : this.faults.visibilityLagMs, run);
    if (waited) c.log.settle();
    return updateResult(this.#operationId, waited);
  }
}
