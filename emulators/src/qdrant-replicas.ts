// Replicas of one Qdrant shard, as lib/collection/src/shards/replica_set/update.rs (v1.19) runs
// them: a `weak` write is applied by the node that received it to its own replica at once and
// reaches every other replica later, each replica applying writes in the order they reach it; a
// `medium` / `strong` write goes through the leader replica (highest peer id), which holds the
// write-ordering lock until every replica applied it, so every replica applies the same order.
// With `wait=true` the answer comes once every replica applied the write (run_update_futures
// awaits them all). Reads with no `consistency` hit the receiving node's own replica; with one,
// lib/collection/src/shards/resolve.rs keeps a record only when enough replicas return it equal.
import { HttpError } from './server.js';

export type WriteOrdering = 'weak' | 'medium' | 'strong';

/** The replicas a read asks and how many of them must agree on a record. */
interface ReadPlan {
  readonly replicas: readonly number[];
  readonly agree: number;
}

const badQuery = (msg: string) =>
  new HttpError(400, { status: { error: `Query deserialize error: ${msg}` }, time: 0 });

export function parseOrdering(raw: string | null): WriteOrdering {
  if (raw === null) return 'weak';
  if (raw === 'weak' || raw === 'medium' || raw === 'strong') return raw;
  throw badQuery(`unknown variant \`${raw}\`, expected one of \`weak\`, \`medium\`, \`strong\``);
}

export class ReplicaSet<T> {
  readonly stores: Map<string, T>[];
  /** Replica the collection's `points` resolve to right now. */
  active = 0;
  #lock: Promise<unknown> = Promise.resolve();

  constructor(
    count: number,
    readonly delayMs: number,
  ) {
    this.stores = Array.from({ length: Math.max(1, count) }, () => new Map<string, T>());
  }

  get count(): number {
    return this.stores.length;
  }

  get points(): Map<string, T> {
    return this.stores[this.active]!;
  }

  /** Runs `run` with `points` resolving to replica `i`. */
  on<R>(i: number, run: () => R): R {
    const prev = this.active;
    this.active = i;
    try {
      return run();
    } finally {
      this.active = prev;
    }
  }

  /** Applies a write with `first` applying it at once and every other replica `delayMs` later. */
  #spread(first: number, run: () => void): Promise<void> {
    return Promise.all(
      this.stores.map((_, i) =>
        i === first
          ? Promise.resolve(this.on(i, run))
          : new Promise<void>((resolve) =>
              setTimeout(() => {
                this.on(i, run);
                resolve();
              }, this.delayMs),
            ),
      ),
    ).then(() => undefined);
  }

  /** Applies a write received by `node`; resolves once every replica applied it. */
  write(node: number, ordering: WriteOrdering, run: () => void): Promise<void> {
    if (ordering === 'weak') return this.#spread(node % this.count, run);
    const turn = this.#lock.then(() => this.#spread(this.count - 1, run));
    this.#lock = turn.catch(() => undefined);
    return turn;
  }

  /** Which replicas a read with `consistency` (query parameter) asks, from `node`. */
  plan(node: number, consistency: string | null): ReadPlan {
    const n = this.count;
    const local = node % n;
    const from = (k: number) => Array.from({ length: k }, (_, j) => (local + j) % n);
    if (consistency === null) return { replicas: [local], agree: 1 };
    if (consistency === 'all') return { replicas: from(n), agree: n };
    if (consistency === 'majority') return { replicas: from(n), agree: Math.floor(n / 2) + 1 };
    if (consistency === 'quorum') {
      const k = Math.floor(n / 2) + 1;
      return { replicas: from(k), agree: k };
    }
    const factor = Number(consistency);
    if (!/^\d+$/.test(consistency) || factor < 1)
      throw badQuery(
        `data did not match any variant of untagged enum ReadConsistency: \`${consistency}\``,
      );
    const k = Math.min(factor, n);
    return { replicas: from(k), agree: k };
  }

  /**
   * Reads records from the replicas of `plan` and keeps each record that at least `agree` of
   * them return equal (id, payload and vector), in the order the first replica returns them.
   */
  resolve<R>(plan: ReadPlan, read: () => R[], key: (r: R) => string): R[] {
    const answers = plan.replicas.map((i) => this.on(i, read));
    if (answers.length === 1) return answers[0]!;
    const votes = new Map<string, number>();
    for (const answer of answers)
      for (const r of answer) {
        const k = `${key(r)}\u0000${JSON.stringify(r)}`;
        votes.set(k, (votes.get(k) ?? 0) + 1);
      }
    const out: R[] = [];
    const taken = new Set<string>();
    for (const answer of answers)
      for (const r of answer) {
        const id = key(r);
        if (taken.has(id)) continue;
        if ((votes.get(`${id}\u0000${JSON.stringify(r)}`) ?? 0) < plan.agree) continue;
        taken.add(id);
        out.push(r);
      }
    return out;
  }
}
