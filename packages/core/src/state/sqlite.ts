import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { RagfreshError } from '../errors.js';
import {
  type IndexEntry,
  leaseJson,
  parseLease,
  type StateBackend,
  type StateGuard,
} from './backend.js';
import { KeyvSqlite, type KeyvSqliteOptions } from './sqlite-adapter.js';
import type { Lease, StateOp } from './types.js';

export interface SqliteBackendOptions {
  /** State file, or `:memory:`; its directory is created. */
  readonly path: string;
  readonly table?: string;
  readonly busyTimeoutMs?: number;
  /** See {@link KeyvSqliteOptions.synchronous}. Default `normal`. */
  readonly synchronous?: 'normal' | 'full';
}

/**
 * SQLite backend: every lease grant and fenced write is one `BEGIN IMMEDIATE` transaction, so
 * it is atomic against other connections and processes sharing the file. Time is this
 * machine's clock (every process sharing a file runs on the same machine).
 */
export class SqliteStateBackend implements StateBackend {
  readonly kind = 'sqlite' as const;
  readonly scanMayRepeat = false;
  readonly adapter: KeyvSqlite;

  constructor(options: SqliteBackendOptions) {
    if (options.path !== ':memory:') {
      try {
        mkdirSync(dirname(options.path), { recursive: true });
      } catch (cause) {
        throw new RagfreshError(
          'STORE_UNREACHABLE',
          `cannot create the directory of SQLite state file ${JSON.stringify(options.path)}; check the path and its permissions.`,
          { scope: 'sqlite', cause },
        );
      }
    }
    this.adapter = new KeyvSqlite({
      path: options.path,
      table: options.table ?? 'ragfresh_state',
      busyTimeoutMs: options.busyTimeoutMs ?? 5000,
      synchronous: options.synchronous ?? 'normal',
    });
  }

  async get(key: string): Promise<string | undefined> {
    return this.adapter.getSync(key);
  }
  async getMany(keys: readonly string[]): Promise<(string | undefined)[]> {
    return this.adapter.getManySync(keys);
  }
  async set(key: string, value: string): Promise<void> {
    this.adapter.setSync(key, value);
  }
  async delete(key: string): Promise<void> {
    this.adapter.deleteSync(key);
  }

  async *scan(prefix: string): AsyncIterable<readonly [string, string]> {
    for await (const [key, value] of this.adapter.iterator<string>(prefix)) {
      yield [key as string, value as string];
    }
  }

  async acquireLease(
    key: string,
    name: string,
    holder: string,
    ttlMs: number,
    minFence = 0,
  ): Promise<Lease | undefined> {
    return this.adapter.transaction(() => {
      const now = Date.now();
      const raw = this.adapter.getSync(key);
      const current = raw === undefined ? undefined : parseLease(raw, key);
      if (current !== undefined && current.expiresAt > now && current.holder !== holder)
        return undefined;
      const lease: Lease = {
        name,
        holder,
        fence: Math.max((current?.fence ?? 0) + 1, minFence),
        expiresAt: now + ttlMs,
      };
      this.adapter.setSync(key, leaseJson(lease));
      return lease;
    });
  }

  async renewLease(key: string, lease: Lease, ttlMs: number): Promise<Lease | undefined> {
    return this.adapter.transaction(() => {
      const raw = this.adapter.getSync(key);
      const current = raw === undefined ? undefined : parseLease(raw, key);
      if (
        current === undefined ||
        current.fence !== lease.fence ||
        current.holder !== lease.holder
      ) {
        return undefined;
      }
      const renewed: Lease = { ...current, expiresAt: Date.now() + ttlMs };
      this.adapter.setSync(key, leaseJson(renewed));
      return renewed;
    });
  }

  async releaseLease(key: string, lease: Lease): Promise<void> {
    this.adapter.transaction(() => {
      const raw = this.adapter.getSync(key);
      const current = raw === undefined ? undefined : parseLease(raw, key);
      if (current === undefined || current.fence !== lease.fence || current.holder !== lease.holder)
        return;
      this.adapter.setSync(key, leaseJson({ ...current, expiresAt: 0 }));
    });
  }

  async currentFence(key: string): Promise<number | undefined> {
    const raw = this.adapter.getSync(key);
    if (raw === undefined) return undefined;
    const lease = parseLease(raw, key);
    return lease.expiresAt > Date.now() ? lease.fence : undefined;
  }

  async putFenced(leaseKey: string, fence: number, key: string, value: string): Promise<boolean> {
    return this.adapter.transaction(() => {
      const raw = this.adapter.getSync(leaseKey);
      const lease = raw === undefined ? undefined : parseLease(raw, leaseKey);
      if (lease === undefined || lease.fence !== fence || lease.expiresAt <= Date.now())
        return false;
      this.adapter.setSync(key, value);
      return true;
    });
  }

  async deleteIfEquals(key: string, value: string): Promise<boolean> {
    return this.adapter.transaction(() => {
      if (this.adapter.getSync(key) !== value) return false;
      return this.adapter.deleteSync(key);
    });
  }

  async commit(guards: readonly StateGuard[], ops: readonly StateOp[]): Promise<boolean> {
    return this.adapter.transaction(() => {
      for (const g of guards) if (this.adapter.getSync(g.key) !== g.value) return false;
      for (const o of ops) {
        if (o.op === 'set') this.adapter.setSync(o.key, o.value);
        else if (o.op === 'del') this.adapter.deleteSync(o.key);
        else if (o.op === 'zrem') this.adapter.zwriteSync('zrem', o.key, o.member);
        else this.adapter.zwriteSync(o.op, o.key, o.member, o.op === 'zadd' ? o.score : o.by);
      }
      return true;
    });
  }

  async zrange(key: string, end: 'low' | 'high', limit: number): Promise<IndexEntry[]> {
    return this.adapter.zreadSync(key, end, limit);
  }

  async zall(key: string): Promise<IndexEntry[]> {
    return this.adapter.zreadSync(key, 'low');
  }

  async zclear(prefix: string): Promise<void> {
    this.adapter.zclearSync(prefix);
  }

  async close(): Promise<void> {
    await this.adapter.disconnect();
  }
}
