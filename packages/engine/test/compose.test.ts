import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMemoryConnector } from '@ragfresh/connector-memory';
import { HashingEmbeddings, InMemoryStateStore, readSpaceRecord } from '@ragfresh/core';
import type { HostTurnPolicy, PolitenessGate, SharedHostTurn } from '@ragfresh/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ComposedEngine,
  composeEngine,
  DEFAULT_PAGE_LIMITS,
  type EngineRole,
  type EngineSettings,
  ExtractPipeline,
  judgePage,
  NoStoreConnector,
  observePage,
  ROLE_TRAITS,
  resolveEngineSettings,
} from './internals.js';

// Every setting x every role that uses it, asserted on the component that applies it (the
// fetcher's behaviour on a real loopback server, the stage context the stages read, the options
// the publisher is opened with). A role added to ROLE_TRAITS is covered here at once; a setting
// that stops reaching a role fails here, not in a user's distributed run.

const NOT_FOUND_PAGE = `<!DOCTYPE html><html><head><title>Page not found | Acme</title></head><body>
<nav><a href="/">Acme</a></nav><main><h1>Page not found</h1>
<p>Sorry, we could not find the page you were looking for. It may have been moved or deleted.</p>
<p>Try the search, or go back to the <a href="/">home page</a>.</p></main></body></html>`;

/** Nested 120 elements deep: over the settings' `pageLimits.maxDepth` (99), under the default (256). */
const DEEP_PAGE = `<!DOCTYPE html><html><head><title>Deep</title></head><body>${'<div>'.repeat(120)}
<p>Deep text that a parser would happily read, nested well past the configured depth.</p>${'</div>'.repeat(120)}</body></html>`;

/**
 * A loopback site: `/ok` answers, `/deep` is nested past the configured depth, any other path is
 * a soft 404, `/hang` never answers, `/fail` is a 500; requests are recorded.
 */
async function site(): Promise<{ server: Server; origin: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    if (req.url === '/hang') return; // never answered: the timeout must end it
    if (req.url === '/fail') {
      res.writeHead(500).end('down');
      return;
    }
    if (req.url === '/robots.txt') {
      res
        .writeHead(200, { 'content-type': 'text/plain' })
        .end('User-agent: *\nDisallow: /private\n');
      return;
    }
    if (req.url === '/deep') {
      res.writeHead(200, { 'content-type': 'text/html' }).end(DEEP_PAGE);
      return;
    }
    if (req.url === '/ok') {
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<html><body><p>ok</p></body></html>');
      return;
    }
    // Any other path: the host's not-found page answered 200 (a soft 404: the classify stage's
    // probe of a random path gets the same page).
    res.writeHead(200, { 'content-type': 'text/html' }).end(NOT_FOUND_PAGE);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** A politeness port that grants every turn and counts them (the Redis gate's contract, in process). */
class CountingGate implements PolitenessGate {
  turns = 0;
  async acquire(_host: string, _policy: HostTurnPolicy): Promise<SharedHostTurn> {
    this.turns++;
    return { answered: async () => {} };
  }
  async block(): Promise<void> {}
  async blockedFor(): Promise<number> {
    return 0;
  }
}

const ROLES = Object.keys(ROLE_TRAITS) as EngineRole[];
const FETCHING = ROLES.filter((r) => ROLE_TRAITS[r].fetches);
const PUBLISHING = ROLES.filter((r) => ROLE_TRAITS[r].publishes !== 'never');

let allowed: Awaited<ReturnType<typeof site>>;
let other: Awaited<ReturnType<typeof site>>;
let settings: EngineSettings;

beforeAll(async () => {
  allowed = await site();
  other = await site();
  settings = resolveEngineSettings({
    sources: [
      {
        id: 'docs',
        urls: [`${allowed.origin}/ok`],
        everyMs: 60_000,
        identity: { mode: 'normalize' },
        contract: { minChars: 123 },
        canaries: [{ query: 'pricing', expect: { phrase: 'per seat' } }],
        retentionMs: 777_000,
        classify: { ignore: ['soft_404'] },
      },
      {
        id: 'other',
        urls: [`${allowed.origin}/ok`],
        everyMs: 60_000,
        identity: { mode: 'strict' },
      },
    ],
    fetch: {
      userAgent: 'compose-test/1.0 (+https://example.org/bot)',
      // Only the first site: the second is a private address like any other.
      allow: [new URL(allowed.origin).host],
      // Long enough for a loopback answer on a loaded machine, short enough to wait out.
      timeoutMs: 1500,
      circuitBreaker: { failureThreshold: 1, cooldownMs: 600_000 },
      minIntervalMs: 7,
      perHostConcurrency: 3,
      globalConcurrency: 11,
      headers: { 'x-compose-test': 'yes' },
    },
    deletion: { goneChecks: 5, minGoneAgeMs: 1234, autoApprove: true, redirectedGone: true },
    publish: { maxRetireShare: 0.35, retireGraceMs: 4321, leaseTtlMs: 9876, retentionMs: 555_000 },
    chunking: { maxTokens: 77 },
    boilerplate: { minShare: 0.9 },
    pageLimits: { maxDepth: 99 },
    concurrency: 5,
    batchSize: 13,
    minCoverage: 0.61,
    embeddingsVersion: 'compose-v7',
  });
});

afterAll(async () => {
  await new Promise((r) => allowed.server.close(r));
  await new Promise((r) => other.server.close(r));
  allowed.server.closeAllConnections();
});

async function compose(role: EngineRole, gate = new CountingGate()): Promise<ComposedEngine> {
  return composeEngine(
    settings,
    {
      ...(ROLE_TRAITS[role].store ? { connector: createMemoryConnector() } : {}),
      state: new InMemoryStateStore(),
      embeddings: new HashingEmbeddings({ dimensions: 16 }),
      ...(ROLE_TRAITS[role].sharedPoliteness ? { politeness: gate } : {}),
    },
    role,
  );
}

/** Runs `check` on a fresh engine of `role`, closing it after. */
async function withRole(
  role: EngineRole,
  check: (e: ComposedEngine, gate: CountingGate) => Promise<void> | void,
): Promise<void> {
  const gate = new CountingGate();
  const e = await compose(role, gate);
  try {
    await check(e, gate);
  } finally {
    await e.close();
  }
}

interface Row {
  readonly setting: string;
  readonly roles: readonly EngineRole[];
  readonly check: (e: ComposedEngine, gate: CountingGate) => Promise<void> | void;
}

const TABLE: readonly Row[] = [
  {
    setting: 'fetch.allow',
    roles: FETCHING,
    async check(e) {
      expect((await e.fetcher.fetch(`${allowed.origin}/ok`)).outcome).toBe('ok');
      // Control: the same kind of address, not listed, is refused.
      expect((await e.fetcher.fetch(`${other.origin}/ok`)).outcome).toBe('ssrf-refused');
    },
  },
  {
    setting: 'fetch.timeoutMs',
    roles: FETCHING,
    async check(e) {
      expect((await e.fetcher.fetch(`${allowed.origin}/hang`)).outcome).toBe('timeout');
    },
  },
  {
    setting: 'fetch.circuitBreaker',
    roles: FETCHING,
    async check(e) {
      // One failure opens the circuit (threshold 1): the next request is refused unsent.
      await e.fetcher.fetch(`${allowed.origin}/fail`);
      expect((await e.fetcher.fetch(`${allowed.origin}/ok`)).outcome).toBe('circuit-open');
    },
  },
  {
    setting: 'fetch.userAgent, fetch.headers, fetch.robots',
    roles: FETCHING,
    async check(e) {
      expect((await e.fetcher.fetch(`${allowed.origin}/private`)).outcome).toBe(
        'robots-disallowed',
      );
      const before = allowed.seen.length;
      expect((await e.fetcher.fetch(`${allowed.origin}/ok`)).outcome).toBe('ok');
      const [page] = allowed.seen.slice(before);
      expect(page?.['user-agent']).toBe(settings.fetch.userAgent);
      expect(page?.['x-compose-test']).toBe('yes');
    },
  },
  {
    setting: 'fetch.minIntervalMs, perHostConcurrency, globalConcurrency',
    roles: ROLES,
    check(e) {
      expect(e.fetcherOptions).toMatchObject({
        minIntervalMs: 7,
        perHostConcurrency: 3,
        globalConcurrency: 11,
      });
    },
  },
  {
    setting: 'shared politeness (distributed roles)',
    roles: ROLES,
    async check(e, gate) {
      await e.fetcher.fetch(`${allowed.origin}/ok`);
      expect(gate.turns > 0).toBe(ROLE_TRAITS[e.role].sharedPoliteness);
    },
  },
  {
    setting: 'deletion.*',
    roles: ROLES,
    check(e) {
      expect(e.context().deletion).toEqual({
        goneChecks: 5,
        minGoneAgeMs: 1234,
        autoApprove: true,
        redirectedGone: true,
      });
    },
  },
  {
    setting: 'publish.maxRetireShare (run gate and batch gate)',
    roles: ROLES,
    check(e) {
      expect(e.context().maxRetireShare).toBe(0.35);
      expect(e.publisherOptions.maxRetireShare).toBe(0.35);
    },
  },
  {
    setting: 'minCoverage (the run coverage gate: the queue end-of-window alert reads the context)',
    roles: ROLES,
    check(e) {
      expect(e.context().minCoverage).toBe(0.61);
    },
  },
  {
    setting: 'publish.retireGraceMs, publish.leaseTtlMs',
    roles: PUBLISHING,
    check(e) {
      expect(e.publisherOptions).toMatchObject({ graceMs: 4321, leaseTtlMs: 9876 });
      expect(e.publisher !== undefined).toBe(ROLE_TRAITS[e.role].publishes === 'now');
    },
  },
  {
    setting: 'sources[].retentionMs over publish.retentionMs (retired versions kept for as-of)',
    roles: PUBLISHING,
    check(e) {
      expect(e.publisherOptions.retentionMs?.('docs')).toBe(777_000);
      expect(e.publisherOptions.retentionMs?.('other')).toBe(555_000);
    },
  },
  {
    setting: 'sources[].contract, sources[].canaries',
    roles: PUBLISHING,
    check(e) {
      expect(e.publisherOptions.contracts?.('docs')).toEqual({ minChars: 123 });
      expect(e.publisherOptions.canaries?.('docs')).toEqual([
        { query: 'pricing', expect: { phrase: 'per seat' } },
      ]);
    },
  },
  {
    setting: 'chunking.maxTokens',
    roles: ROLES,
    check(e) {
      expect(e.pipeline.pipelineKey).toBe(new ExtractPipeline({ maxTokens: 77 }).pipelineKey);
      expect(e.pipeline.pipelineKey).not.toBe(new ExtractPipeline().pipelineKey);
    },
  },
  {
    setting: 'boilerplate (learned by a refresh, applied as stored elsewhere)',
    roles: ROLES,
    check(e) {
      const learns = ROLE_TRAITS[e.role].boilerplate === 'learn';
      expect(e.deps.boilerplate).toEqual(learns ? { minShare: 0.9 } : false);
      // Every role cuts under the stored models: never the bare extractor.
      expect(e.pipeline).not.toBeInstanceOf(ExtractPipeline);
    },
  },
  {
    setting: 'sources[].classify.ignore (the classify stage of a source)',
    roles: FETCHING,
    async check(e) {
      const url = `${allowed.origin}/missing`;
      const documentId = 'docs:missing';
      const acquired = await observePage(e.observer(), { url, documentId, sourceId: 'docs' });
      if (acquired.kind !== 'page') throw new Error(`expected a page, got ${acquired.kind}`);
      const page = { url, documentId };
      const judged = await judgePage(e.judge('docs'), page, acquired.outcome, acquired.result);
      expect(judged.kind).toBe('document');
      if (judged.kind === 'document')
        expect(judged.labels[0]).toMatchObject({
          code: 'ignored',
          detail: expect.stringMatching(/^by classify\.ignore: soft_404: /),
        });
      // Control: a source without the override is told the page is not the document.
      const other = await judgePage(e.judge('other'), page, acquired.outcome, acquired.result);
      expect(other.kind).toBe('not-the-document');
      expect(() => e.judge('nope')).toThrow(
        /no source "nope" in the settings \(sources: docs, other\)/,
      );
    },
  },
  {
    setting: 'pageLimits (the page step: a page over a limit is refused with its reason)',
    roles: FETCHING,
    async check(e) {
      const page = { url: `${allowed.origin}/deep`, documentId: 'docs:deep', sourceId: 'docs' };
      const observer = e.observer();
      expect(observer.pipeline).toBe(e.pipeline);
      const limited = await observePage(observer, page);
      if (limited.kind !== 'page') throw new Error(`expected a page, got ${limited.kind}`);
      expect(limited.outcome).toMatchObject({
        kind: 'not-the-document',
        reasons: [
          { code: 'page-too-deep', detail: expect.stringMatching(/over the 99-level limit/) },
        ],
      });
      // Control: the same page, the same pipeline, under the default limits parses.
      const open = await observePage({ ...observer, pageLimits: DEFAULT_PAGE_LIMITS }, page);
      expect(open.kind === 'page' ? open.outcome.kind : open.kind).toBe('document');
    },
  },
  {
    setting: 'embeddingsVersion (the space checked, and recorded by a role that writes)',
    roles: ROLES,
    async check(e) {
      expect(e.space.version).toBe('compose-v7');
      const recorded = await readSpaceRecord(e.state);
      expect(recorded?.active.id).toBe(
        ROLE_TRAITS[e.role].space === 'adopt' ? e.space.id : undefined,
      );
    },
  },
  {
    setting: 'pageLimits, concurrency, batchSize',
    roles: ROLES,
    check(e) {
      const ctx = e.context();
      expect(ctx.pageLimits.maxDepth).toBe(99);
      expect(ctx.concurrency).toBe(5);
      expect(ctx.batchSize).toBe(13);
      expect(e.context({ batchSize: 2 }).batchSize).toBe(2);
    },
  },
];

describe('composeEngine: every setting reaches every role that uses it', () => {
  for (const row of TABLE)
    for (const role of row.roles)
      it(`${row.setting} -> ${role}`, async () => {
        await withRole(role, row.check);
      });

  it('a distributed role without a shared politeness port is refused, and its ports closed', async () => {
    const connector = createMemoryConnector();
    await expect(
      composeEngine(
        settings,
        {
          connector,
          state: new InMemoryStateStore(),
          embeddings: new HashingEmbeddings({ dimensions: 16 }),
        },
        'page-worker',
      ),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('the loader and live roles open no ragfresh store: a connector is refused, a store role needs one, their store refuses every verb', async () => {
    const ports = {
      state: new InMemoryStateStore(),
      embeddings: new HashingEmbeddings({ dimensions: 16 }),
    };
    expect(ROLES.filter((r) => !ROLE_TRAITS[r].store)).toEqual(['loader', 'live']);
    for (const role of ['loader', 'live'] as const) {
      await expect(
        composeEngine(settings, { ...ports, connector: createMemoryConnector() }, role),
      ).rejects.toThrow(
        new RegExp(
          `^\\[ragfresh\\] \\[engine\\] the ${role} role opens no ragfresh store .*leave ports\\.connector out\\.$`,
        ),
      );
      await withRole(role, async (e) => {
        expect(e.connector).toBeInstanceOf(NoStoreConnector);
        await expect(e.connector.readEpoch()).rejects.toMatchObject({
          code: 'NOT_SUPPORTED',
          message: expect.stringMatching(
            new RegExp(`the ${role} role opens no ragfresh store \\(its LangChain host`),
          ),
        });
      });
    }
    await expect(composeEngine(settings, ports, 'refresh')).rejects.toThrow(
      /^\[ragfresh\] \[engine\] the refresh role reads and writes a ragfresh store; pass ports\.connector\.$/,
    );
  });

  it('the roles that fetch are the ones a fetch setting is checked on', () => {
    expect(FETCHING).toEqual([
      'refresh',
      'scheduler',
      'page-worker',
      'worker',
      'repair',
      'loader',
      'live',
    ]);
  });

  it('a role that does not fetch builds no fetcher or engine until one is used', async () => {
    for (const role of ROLES) {
      const e = await compose(role);
      try {
        const fetches = ROLE_TRAITS[role].fetches;
        expect(e.built(), role).toEqual({ fetcher: fetches, engine: fetches });
        // The cut as stored needs neither.
        expect(e.pipeline.pipelineKey).toBe(new ExtractPipeline({ maxTokens: 77 }).pipelineKey);
        expect(e.built(), role).toEqual({ fetcher: fetches, engine: fetches });
        // Built on first use, once.
        expect(e.engine).toBe(e.engine);
        expect(e.built()).toEqual({ fetcher: true, engine: true });
        expect(e.deps.fetcher).toBe(e.fetcher);
      } finally {
        await e.close();
      }
    }
  });

  it('a role that does not publish has no publisher, and a stage reaching for it is told so', async () => {
    await withRole('read', (e) => {
      expect(e.publisher).toBeUndefined();
      expect(() => e.context().publisher()).toThrow(/composed without a publisher/);
    });
  });
});
