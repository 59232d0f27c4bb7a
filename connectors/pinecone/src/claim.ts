// The exclusive epoch move on Pinecone, which has no conditional write: an LSN-ordered claim
// that expires, so a publisher that dies (or loses the network) anywhere inside the move can
// never stop the next one. The protocol and its bounds are in docs/connectors/pinecone.md.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RagfreshError } from '@ragfresh/core';
import { type CallOptions, type DataPlane, isUnsupported } from './data-plane.js';

/** Reserved id of the epoch pointer vector, in the reserved epoch namespace. */
export const EPOCH_VECTOR_ID = 'ragfresh-epoch-pointer';
export const EPOCH_SENTINEL_KEY = 'rf_sentinel';
export const EPOCH_VALUE_KEY = 'rf_epoch';
/** Token of the claim whose winner last moved the pointer. */
export const EPOCH_TOKEN_KEY = 'rf_epoch_token';
/** Embedding space of the view the pointer publishes (set by the move that names one). */
export const EPOCH_SPACE_KEY = 'rf_epoch_space';
/** Name of the index the pointer's chunks live in (set by every move where it is known). */
export const EPOCH_INDEX_KEY = 'rf_epoch_index';

/**
 * Keys a move writes into the pointer beside the epoch, in the same update (so a pointer never
 * names a space its epoch was not published in); a key left out keeps its stored value.
 */
export type PointerExtras = Readonly<Record<string, string>>;
/** Id prefix of the epoch claims (`<prefix><expected>-<token>`) in the epoch namespace. */
export const EPOCH_CLAIM_PREFIX = 'ragfresh-epoch-claim-';
export const CLAIM_FROM_KEY = 'rf_claim_from';
export const CLAIM_TOKEN_KEY = 'rf_claim_token';
export const CLAIM_LSN_KEY = 'rf_claim_lsn';

/** Default claim expiry for a declared lag: twice the longest a claimant may take. */
export function defaultClaimExpiryMs(maxLagMs: number): number {
  return 2 * (2 * maxLagMs + 1_000);
}

/** What the claim protocol needs from the connector. */
export interface ClaimPort {
  dataPlane(): DataPlane;
  /** The reserved epoch namespace. */
  readonly namespace: string;
  readonly maxLagMs: number;
  /** Vector of the pointer and of every claim (all score alike). */
  probe(): number[];
  call<T>(what: string, op: () => Promise<T>): Promise<T>;
  /** Records an LSN of the epoch namespace; undefined where the index sends none. */
  noteLsn(lsn: number | undefined): number | undefined;
  /** Waits until queries of the epoch namespace reflect `lsn`. */
  waitIndexed(lsn: number | undefined, what: string): Promise<boolean>;
  waitFor(what: string, check: () => Promise<boolean>): Promise<void>;
  fetchPointer(): Promise<Readonly<Record<string, unknown>> | undefined>;
  conflict(expected: number, detail: string): RagfreshError;
  notSupported(detail: string): RagfreshError;
}

interface SeenClaim {
  readonly id: string;
  readonly from: number;
  readonly lsn: number | undefined;
}

interface Look {
  /** The pointer's epoch as this answer sees it (undefined: not indexed yet). */
  readonly pointer: number | undefined;
  readonly claims: readonly SeenClaim[];
}

/**
 * Claims of one connector. A rival claim is judged dead once this connector has seen it for
 * `expiryMs` without the pointer moving; its owner gave up long before (a claimant abandons its
 * claim `expiryMs / 2` after it started writing it), so ignoring and deleting it is safe.
 */
export class EpochClaims {
  /** Claim id -> when this connector first saw it (performance.now()), and its epoch. */
  readonly #firstSeen = new Map<string, { from: number; at: number }>();
  /** Whether update by filter works on this index (the conditional pointer write). */
  #filterUpdate = true;

  constructor(
    readonly port: ClaimPort,
    readonly expiryMs: number,
  ) {}

  /** Moves the pointer by id with no claim (`lease-only`). */
  async moveUnclaimed(next: number, extras: PointerExtras = {}): Promise<void> {
    await this.#confirm(
      undefined,
      next,
      undefined,
      await this.#writePointer(undefined, next, undefined, extras),
    );
  }

  /**
   * The exclusive move `expected -> next`:
   * 1. wait until no live claim on `expected` is visible (dead ones are deleted);
   * 2. write a claim, then publish its LSN in it, within a deadline of `expiryMs / 2`;
   * 3. once queries reflect both writes, the live claim with the smallest LSN wins; a claim
   *    whose LSN is unknown is waited for a while (it is about to publish it, or dead);
   * 4. the winner moves the pointer with an update conditional on it still holding `expected`,
   *    reads it back with its own token, and deletes the claims it decided among.
   * A claim that loses to a rival (a smaller LSN, or one unknown for too long) is withdrawn and
   * the move starts over at 1, which waits for that rival to move the pointer or to expire.
   */
  async advance(expected: number, next: number, extras: PointerExtras = {}): Promise<void> {
    for (const [id, seen] of this.#firstSeen) if (seen.from < expected) this.#firstSeen.delete(id);
    const patience = 2 * this.expiryMs + 2 * this.port.maxLagMs + 1_000;
    const start = performance.now();
    for (;;) {
      await this.#clearTheWay(expected);
      if ((await this.#attempt(expected, next, extras)) === 'done') return;
      if (performance.now() - start > patience)
        throw this.port.conflict(expected, `rival claims kept it for ${patience} ms`);
    }
  }

  /** Steps 2–4 once; 'blocked' when a rival claim stands in the way (this claim is withdrawn). */
  async #attempt(
    expected: number,
    next: number,
    extras: PointerExtras,
  ): Promise<'done' | 'blocked'> {
    const token = randomUUID();
    const id = `${EPOCH_CLAIM_PREFIX}${expected}-${token}`;
    const budget = Math.floor(this.expiryMs / 2);
    const signal = AbortSignal.timeout(budget);
    let pointerSent = false;
    try {
      const claimLsn = await this.port.call('claim the epoch move', () =>
        this.port.dataPlane().upsert(
          {
            namespace: this.port.namespace,
            vectors: [
              {
                id,
                values: this.port.probe(),
                metadata: { [CLAIM_FROM_KEY]: expected, [CLAIM_TOKEN_KEY]: token },
              },
            ],
          },
          { signal },
        ),
      );
      if (this.port.noteLsn(claimLsn) === undefined) {
        await this.#remove([id]);
        throw this.port.notSupported(
          "this index sends no x-pinecone-request-lsn header, so the epoch claim cannot be made exclusive; pass epochClaim: 'lease-only' (the manifest then says only the publisher lease protects the epoch).",
        );
      }
      const published = await this.port.call('publish the claim LSN', () =>
        this.port
          .dataPlane()
          .update(
            { namespace: this.port.namespace, id, setMetadata: { [CLAIM_LSN_KEY]: claimLsn! } },
            { signal },
          ),
      );
      const barrier = this.port.noteLsn(published.lsn) ?? claimLsn!;
      const decided = await this.#decide(expected, id, claimLsn!, barrier, budget, signal);
      if (decided.outcome !== 'won') {
        await this.#remove([id]);
        if (decided.outcome === 'blocked') return 'blocked';
        throw this.port.conflict(expected, `the store moved to ${decided.pointer}`);
      }
      pointerSent = true;
      const lsn = await this.#writePointer(expected, next, token, extras, signal);
      await this.#confirm(expected, next, token, lsn);
      await this.#remove([...decided.ids, id]);
      return 'done';
    } catch (err) {
      if (!signal.aborted) throw err;
      // Past the deadline nothing more is sent. The claim stays until it expires unless the
      // pointer write never went out: then no move of ours can land and it can go now.
      if (!pointerSent) await this.#remove([id]);
      throw this.port.conflict(
        expected,
        `the claim was not decided and moved within ${budget} ms (half its ${this.expiryMs} ms expiry); the move can be retried`,
      );
    }
  }

  /** Claims and pointer of the epoch namespace; undefined when the answer predates `barrier`. */
  async #look(
    expected: number,
    barrier?: number,
    options: CallOptions = {},
  ): Promise<Look | undefined> {
    const r = await this.port.call('read the epoch claims', () =>
      this.port.dataPlane().query(
        {
          namespace: this.port.namespace,
          vector: this.port.probe(),
          topK: 100,
          includeMetadata: true,
          filter: {
            $or: [
              { [EPOCH_SENTINEL_KEY]: { $eq: 'epoch' } },
              { [CLAIM_FROM_KEY]: { $lte: expected } },
            ],
          },
        },
        options,
      ),
    );
    if (barrier !== undefined && (r.maxIndexedLsn === undefined || r.maxIndexedLsn < barrier))
      return undefined;
    let pointer: number | undefined;
    const claims: SeenClaim[] = [];
    for (const m of r.value.matches ?? []) {
      const meta = (m.metadata ?? {}) as Record<string, unknown>;
      if (m.id === EPOCH_VECTOR_ID) {
        const v = meta[EPOCH_VALUE_KEY];
        if (typeof v === 'number') pointer = v;
        continue;
      }
      const from = meta[CLAIM_FROM_KEY];
      if (!m.id.startsWith(EPOCH_CLAIM_PREFIX) || typeof from !== 'number') continue;
      const lsn = meta[CLAIM_LSN_KEY];
      claims.push({ id: m.id, from, lsn: typeof lsn === 'number' ? lsn : undefined });
    }
    return { pointer, claims };
  }

  /** Whether a rival claim is dead: of an older epoch, or seen for `expiryMs` already. */
  #dead(c: SeenClaim, expected: number, now: number): boolean {
    if (c.from < expected) return true;
    let seen = this.#firstSeen.get(c.id);
    if (seen === undefined) {
      seen = { from: c.from, at: now };
      this.#firstSeen.set(c.id, seen);
    }
    return now - seen.at >= this.expiryMs;
  }

  /** Phase 1: returns once no live claim on `expected` is visible; deletes the dead ones. */
  async #clearTheWay(expected: number): Promise<void> {
    const start = performance.now();
    const patience = this.expiryMs + 2 * this.port.maxLagMs + 1_000;
    for (let delay = 25; ; delay = Math.min(delay * 2, 1_000)) {
      const look = (await this.#look(expected))!;
      if (look.pointer !== undefined && look.pointer > expected)
        throw this.port.conflict(expected, `the store moved to ${look.pointer}`);
      const now = performance.now();
      const dead: string[] = [];
      let live = 0;
      // Wake no later than the first live claim expires.
      let wake = delay;
      for (const c of look.claims) {
        if (this.#dead(c, expected, now)) dead.push(c.id);
        else {
          live += 1;
          wake = Math.min(wake, this.#firstSeen.get(c.id)!.at + this.expiryMs - now + 1);
        }
      }
      await this.#remove(dead);
      if (live === 0) return;
      if (now + wake - start > patience) {
        throw this.port.conflict(
          expected,
          `${live} claim(s) on it stayed live for ${patience} ms without the pointer moving`,
        );
      }
      await sleep(Math.max(1, wake));
    }
  }

  /** Phase 3: polls until the answer reflects `barrier`, then decides. */
  async #decide(
    expected: number,
    own: string,
    ownLsn: number,
    barrier: number,
    budget: number,
    signal: AbortSignal,
  ): Promise<
    | { outcome: 'won'; ids: string[] }
    | { outcome: 'blocked' }
    | { outcome: 'moved'; pointer: number | undefined }
  > {
    // A live claimant publishes its LSN right after writing its claim; one that has not after
    // half this attempt's budget is probably dead: step back and let it expire.
    const grace = budget / 2;
    for (let delay = 25; ; delay = Math.min(delay * 2, 1_000)) {
      const look = await this.#look(expected, barrier, { signal });
      if (look !== undefined) {
        if (look.pointer !== expected) return { outcome: 'moved', pointer: look.pointer };
        const now = performance.now();
        let unknown = false;
        let present = false;
        const ids: string[] = [];
        for (const c of look.claims) {
          ids.push(c.id);
          if (c.id === own) {
            present = true;
            continue;
          }
          if (this.#dead(c, expected, now)) continue;
          if (c.lsn === undefined) {
            if (now - this.#firstSeen.get(c.id)!.at > grace) return { outcome: 'blocked' };
            unknown = true;
          } else if (c.lsn < ownLsn) return { outcome: 'blocked' };
        }
        // Our claim deleted by a rival that judged it dead: step back.
        if (!present) return { outcome: 'blocked' };
        if (!unknown) return { outcome: 'won', ids };
      }
      await sleep(delay, undefined, { signal });
    }
  }

  /**
   * Writes the pointer. With `expected`, the write is an update by filter that matches the
   * pointer only while the index shows it at `expected`: a late write of a claimant whose claim
   * expired matches nothing once the next move is indexed. `extras` go in the same update.
   */
  async #writePointer(
    expected: number | undefined,
    next: number,
    token: string | undefined,
    extras: PointerExtras,
    signal?: AbortSignal,
  ): Promise<number | undefined> {
    const setMetadata = {
      ...extras,
      [EPOCH_VALUE_KEY]: next,
      ...(token === undefined ? {} : { [EPOCH_TOKEN_KEY]: token }),
    };
    const options = signal === undefined ? {} : { signal };
    if (expected !== undefined && this.#filterUpdate) {
      try {
        const r = await this.port.call('advance epoch', () =>
          this.port.dataPlane().update(
            {
              namespace: this.port.namespace,
              filter: {
                $and: [
                  { [EPOCH_SENTINEL_KEY]: { $eq: 'epoch' } },
                  { [EPOCH_VALUE_KEY]: { $eq: expected } },
                ],
              },
              setMetadata,
            },
            options,
          ),
        );
        // No match: another claimant's move, or this call's own earlier attempt whose answer
        // was lost (a retry after a timeout). The read-back by token tells them apart.
        if (r.matchedRecords === 0) return undefined;
        return this.port.noteLsn(r.lsn);
      } catch (err) {
        if (!isUnsupported(err)) throw err;
        this.#filterUpdate = false; // indexes without update by metadata filter
      }
    }
    const r = await this.port.call('advance epoch', () =>
      this.port
        .dataPlane()
        .update({ namespace: this.port.namespace, id: EPOCH_VECTOR_ID, setMetadata }, options),
    );
    return this.port.noteLsn(r.lsn);
  }

  /** Returns once queries reflect the move and the pointer fetches back as `next` (and token). */
  async #confirm(
    expected: number | undefined,
    next: number,
    token: string | undefined,
    lsn: number | undefined,
  ): Promise<void> {
    await this.port.waitIndexed(lsn, 'the epoch move');
    let seen: Readonly<Record<string, unknown>> | undefined;
    await this.port.waitFor(`epoch ${next} to become visible`, async () => {
      seen = await this.port.fetchPointer();
      return typeof seen?.[EPOCH_VALUE_KEY] === 'number' && seen[EPOCH_VALUE_KEY] >= next;
    });
    if (expected === undefined || token === undefined) return;
    if (seen?.[EPOCH_VALUE_KEY] !== next || seen[EPOCH_TOKEN_KEY] !== token) {
      throw this.port.conflict(
        expected,
        `the pointer reads ${String(seen?.[EPOCH_VALUE_KEY])} from another claim after this move`,
      );
    }
  }

  /** Best-effort delete of claims: a claim left behind expires and is deleted by the next mover. */
  async #remove(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      const lsn = await this.port.call('delete epoch claims', () =>
        this.port.dataPlane().delete({ namespace: this.port.namespace, ids: [...new Set(ids)] }),
      );
      this.port.noteLsn(lsn);
    } catch {
      // Cleanup only: the move's outcome does not depend on it.
    }
  }
}
