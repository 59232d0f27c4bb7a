import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { EmbeddingsInterface } from '@langchain/core/embeddings';
import {
  type Connector,
  FileAuditLog,
  HashingEmbeddings,
  isRagfreshError,
  openStateStore,
  RagfreshError,
  type SpaceRecord,
  type Tombstone,
} from '@ragfresh/core';
import {
  type ComposedEngine,
  composeEngine,
  type EngineRole,
  type PageRenderer,
  type TombstoneMirror,
} from '@ragfresh/engine';
import type { PagePipeline } from '@ragfresh/engine/pipeline';
import { FileRawSnapshotStore, type PolitenessGate } from '@ragfresh/fetch';
import { auditLogPath, LEASE_TTL_MS, type ResolvedConfig } from './config.js';
import { createConnector } from './connectors.js';
import { type Logger, silentLogger } from './log.js';
import { Metrics } from './metrics.js';

export { createConnector } from './connectors.js';

function isEmbeddings(v: unknown): v is EmbeddingsInterface {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as EmbeddingsInterface).embedDocuments === 'function'
  );
}

export interface Runtime extends ComposedEngine {
  readonly config: ResolvedConfig;
  readonly metrics: Metrics;
}

export interface RuntimeOptions {
  readonly log?: Logger;
  readonly now?: () => Date;
  readonly pipeline?: PagePipeline;
  /**
   * What this process does (default `refresh`): read-only commands (status, query, review
   * list) use `read` and never take the publisher lease; workers pass their own role.
   */
  readonly role?: EngineRole;
  /** Shared per-host politeness (workers and the distributed scheduler). */
  readonly politeness?: PolitenessGate;
}

/** The configured embeddings, or the offline hashing embedder of the configured size and seed. */
export function embeddingsOf(config: ResolvedConfig): EmbeddingsInterface {
  return isEmbeddings(config.embeddings)
    ? config.embeddings
    : new HashingEmbeddings({
        dimensions: config.embeddings?.dimensions ?? 256,
        ...(config.embeddings?.seed === undefined ? {} : { seed: config.embeddings.seed }),
      });
}

/**
 * The configured connector alone, opened for reading (`status`'s epoch check): no state store,
 * fetcher, publisher or engine. The caller closes it.
 */
export async function openConnector(
  config: ResolvedConfig,
  /** The state's space record: the index's namespace and dimensions (a migration moves them). */
  space?: SpaceRecord,
): Promise<Connector> {
  const configured = await createConnector(config.connector, {
    dataDir: config.dataDir,
    baseDir: config.configDir,
  });
  const connector =
    space?.namespace === undefined ? configured : configured.forNamespace(space.namespace);
  const dimensions =
    space?.active.dimensions ??
    (await embeddingsOf(config).embedQuery('ragfresh dimension probe')).length;
  await connector.open({ dimensions });
  return connector;
}

/**
 * The CLI's ports (files under `dataDir`, the configured state and connector, the embeddings,
 * metrics, the renderer) handed to `composeEngine` with the resolved settings: the CLI wires
 * nothing else itself.
 */
export async function openRuntime(
  config: ResolvedConfig,
  options: RuntimeOptions = {},
): Promise<Runtime> {
  mkdirSync(config.dataDir, { recursive: true });
  const role = options.role ?? 'refresh';
  const embeddings = embeddingsOf(config);
  const state = await openStateStore(config.state);
  let connector: Connector;
  try {
    connector = await createConnector(config.connector, {
      dataDir: config.dataDir,
      baseDir: config.configDir,
    });
  } catch (err) {
    await state.close();
    throw err;
  }
  const metrics = new Metrics();
  const holder = new HolderFile(join(config.dataDir, 'publisher.json'));
  // Launched on first use only, for sources that render.
  let renderer: { close(): Promise<void> } | undefined;
  const needsRender = config.sources.some(
    (s) => s.acquisition === 'rendered' || s.acquisition === 'auto',
  );
  const launchRenderer = async (): Promise<PageRenderer> => {
    let mod: typeof import('@ragfresh/render');
    try {
      mod = await import('@ragfresh/render');
    } catch (cause) {
      throw new RagfreshError(
        'INVALID_CONFIG',
        'acquisition "rendered"/"auto" needs @ragfresh/render; install it.',
        { scope: 'config', cause },
      );
    }
    const launched = await mod.Renderer.launch({ userAgent: config.settings.fetch.userAgent });
    renderer = launched;
    return launched;
  };
  let composed: ComposedEngine;
  try {
    composed = await composeEngine(
      config.settings,
      {
        connector,
        state,
        embeddings,
        snapshots: new FileRawSnapshotStore(join(config.dataDir, 'raw')),
        tombstones: new FileTombstoneMirror(join(config.dataDir, 'tombstones.json')),
        audit: new FileAuditLog(auditLogPath(config)),
        log: options.log ?? silentLogger,
        metrics,
        ...(options.politeness === undefined ? {} : { politeness: options.politeness }),
        ...(options.pipeline === undefined ? {} : { pipeline: options.pipeline }),
        ...(needsRender ? { renderer: launchRenderer } : {}),
        ...(options.now === undefined ? {} : { now: options.now }),
      },
      role,
    );
  } catch (err) {
    if (isRagfreshError(err, 'LEASE_HELD')) throw holder.busyError(err);
    throw err;
  }
  if (composed.publisher !== undefined) holder.claim();
  // Assigned, not spread: a spread would read (and so build) the parts a role builds lazily.
  const closeEngine = composed.close.bind(composed);
  return Object.assign(composed, {
    config,
    metrics,
    async close() {
      holder.release();
      await renderer?.close();
      await closeEngine();
    },
  });
}

/**
 * Tombstones mirrored in `<dataDir>/tombstones.json`, beside the raw snapshots, so a lost state
 * file does not take them all: `ragfresh recover` reads them back. Written whole to a temporary
 * file and renamed, so a crash leaves the old or the new file, never half of one.
 */
export class FileTombstoneMirror implements TombstoneMirror {
  readonly #path: string;

  constructor(path: string) {
    this.#path = path;
  }

  async list(): Promise<Tombstone[]> {
    try {
      const parsed = JSON.parse(readFileSync(this.#path, 'utf8')) as { tombstones?: Tombstone[] };
      return parsed.tombstones ?? [];
    } catch {
      return [];
    }
  }

  async put(t: Tombstone): Promise<void> {
    const all = (await this.list()).filter((x) => x.documentId !== t.documentId);
    this.#write([...all, t]);
  }

  async delete(documentId: string): Promise<void> {
    this.#write((await this.list()).filter((x) => x.documentId !== documentId));
  }

  #write(tombstones: readonly Tombstone[]): void {
    const tmp = `${this.#path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ version: 1, tombstones }, null, 1)}\n`);
    renameSync(tmp, this.#path);
  }
}

/**
 * Who holds the publish lease, in `<dataDir>/publisher.json` (pid, host, start, last seen), so a
 * second run can say whom it waits for and until when. The lease in the state store is the
 * lock; this file only explains it.
 */
class HolderFile {
  readonly #path: string;
  #timer: NodeJS.Timeout | undefined;
  readonly #startedAt = new Date().toISOString();

  constructor(path: string) {
    this.#path = path;
  }

  claim(): void {
    this.#write();
    this.#timer = setInterval(() => this.#write(), LEASE_TTL_MS / 4);
    this.#timer.unref();
  }

  release(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    rmSync(this.#path, { force: true });
  }

  #write(): void {
    const info = {
      pid: process.pid,
      host: hostname(),
      command: process.argv.slice(2).join(' '),
      startedAt: this.#startedAt,
      seenAt: new Date().toISOString(),
    };
    try {
      writeFileSync(this.#path, `${JSON.stringify(info)}\n`);
    } catch {
      // Only an explanation for other runs; the lease itself is in the state store.
    }
  }

  busyError(cause: unknown): RagfreshError {
    let who = 'another ragfresh run';
    let until = new Date(Date.now() + LEASE_TTL_MS).toISOString();
    try {
      const info = JSON.parse(readFileSync(this.#path, 'utf8')) as Record<string, string>;
      who = `another ragfresh run (pid ${info.pid} on ${info.host}, \`ragfresh ${info.command}\`, started ${info.startedAt})`;
      until = new Date(Date.parse(info.seenAt ?? '') + LEASE_TTL_MS).toISOString();
    } catch {
      // No holder file: the holder may be another machine sharing the state store.
    }
    return new RagfreshError(
      'LEASE_HELD',
      `${who} holds the publish lease: nothing was done. It is released when that run ends; if that run died, the lease expires by ${until}. Retry after that (exit code 6 means busy, not failed).`,
      { scope: 'cli', cause },
    );
  }
}
