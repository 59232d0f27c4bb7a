import type { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * A pglite-socket server whose multiplexer schedules whole protocol units instead of single
 * messages.
 *
 * Why: PGlite is one Postgres session. pglite-socket 0.2.17 queues every wire message on its
 * own and only keeps a connection's messages together inside an explicit transaction
 * block. A parameterised query is several messages (Parse, Bind, Describe, Execute, Sync),
 * so two connections querying at once interleave them on the one session: a Bind meets the
 * other connection's unnamed statement, and clients get `portal "" does not exist` or, worse,
 * rows of the other query. Here a connection's extended-protocol messages are held until its
 * Sync and then run back to back under PGlite's lock, so every unit sees its own statement.
 * A connection that opens a transaction (or Flushes mid-sequence) keeps the session until the
 * transaction ends, as before. Real Postgres needs none of this: a session per connection.
 */

/**
 * Client messages held until the connection's next Sync (`S`) or Flush (`H`); every other
 * message (Sync, Flush, Query, startup, Terminate, ...) ends the unit and runs it.
 */
const HELD = new Set(['P', 'B', 'D', 'E', 'C'].map((c) => c.charCodeAt(0)));
const FLUSH = 'H'.charCodeAt(0);

interface Unit {
  readonly handlerId: number;
  readonly messages: Uint8Array[];
  readonly onData: (data: Uint8Array) => void;
  readonly resolve: (bytes: number) => void;
  readonly reject: (err: Error) => void;
}

/** Drop-in for pglite-socket's internal QueryQueueManager (same four methods). */
export class ProtocolUnitQueue {
  readonly #db: PGlite;
  readonly #pending = new Map<number, Uint8Array[]>();
  #units: Unit[] = [];
  #draining = false;
  /** Connection that last ran; it keeps the session while a transaction or a flushed sequence is open. */
  #owner: number | null = null;
  #ownerMidSequence = false;

  constructor(db: PGlite) {
    this.#db = db;
  }

  enqueue(
    handlerId: number,
    message: Uint8Array,
    onData: (data: Uint8Array) => void,
  ): Promise<number> {
    const type = message[0] ?? 0;
    const pending = this.#pending.get(handlerId) ?? [];
    if (HELD.has(type)) {
      pending.push(message);
      this.#pending.set(handlerId, pending);
      return Promise.resolve(0);
    }
    this.#pending.delete(handlerId);
    return new Promise((resolve, reject) => {
      this.#units.push({ handlerId, messages: [...pending, message], onData, resolve, reject });
      void this.#drain();
    });
  }

  #pinned(): boolean {
    return this.#owner !== null && (this.#ownerMidSequence || this.#db.isInTransaction());
  }

  async #drain(): Promise<void> {
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (this.#units.length > 0) {
        const index = this.#pinned()
          ? this.#units.findIndex((u) => u.handlerId === this.#owner)
          : 0;
        if (index < 0) break; // the owner's next unit will restart draining
        const [unit] = this.#units.splice(index, 1);
        if (unit === undefined) break;
        let bytes = 0;
        try {
          await this.#db.runExclusive(async () => {
            for (const m of unit.messages) {
              await this.#db.execProtocolRawStream(m, {
                onRawData: (data) => {
                  bytes += data.length;
                  unit.onData(data);
                },
              });
            }
          });
          const last = unit.messages[unit.messages.length - 1]?.[0];
          this.#owner = unit.handlerId;
          this.#ownerMidSequence = last === FLUSH;
          unit.resolve(bytes);
        } catch (err) {
          unit.reject(err instanceof Error ? err : new Error(String(err)));
        }
      }
    } finally {
      this.#draining = false;
    }
  }

  getQueueLength(): number {
    return this.#units.length;
  }

  clearQueueForHandler(handlerId: number): void {
    this.#pending.delete(handlerId);
    const keep: Unit[] = [];
    for (const u of this.#units) {
      if (u.handlerId === handlerId) u.reject(new Error('Handler disconnected'));
      else keep.push(u);
    }
    this.#units = keep;
  }

  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.#owner !== handlerId) return;
    if (this.#db.isInTransaction()) await this.#db.exec('ROLLBACK');
    this.#owner = null;
    this.#ownerMidSequence = false;
    await this.#drain();
  }
}

export interface PgliteServerOptions {
  readonly db: PGlite;
  readonly host?: string;
  /** 0 (default) picks a free port. */
  readonly port?: number;
  readonly maxConnections: number;
}

/** A started PGLiteSocketServer with the unit-scheduling queue installed. */
export async function startPgliteServer(options: PgliteServerOptions): Promise<PGLiteSocketServer> {
  const server = new PGLiteSocketServer({
    db: options.db,
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    maxConnections: options.maxConnections,
  });
  const internals = server as unknown as { queryQueue?: unknown };
  if (internals.queryQueue === undefined) {
    throw new Error(
      'pglite-socket internals changed (no queryQueue); re-check src/pglite-server.ts against the installed version.',
    );
  }
  internals.queryQueue = new ProtocolUnitQueue(options.db);
  await server.start();
  return server;
}
