import {
  type Connector,
  type ConnectorCapabilities,
  errorMessage,
  isRagfreshError,
  type JournalStep,
  type PublishCandidate,
  Publisher,
  toStoredChunk,
} from '@ragfresh/core';
import type { CaseContext, ConformanceCase } from '../types.js';
import { chunkIdsOf, listInView, sameMembers, sleep } from './helpers.js';

/**
 * A's lease: short, so B can take over while A is paused inside one step, but longer than any
 * step A runs before its pause (verification waits up to the declared lag).
 */
function pausedLeaseMs(c: ConnectorCapabilities): number {
  // 2 s on an immediate store: a loaded machine (CI, two cores) spent more than 300 ms in one
  // request before the pause, and A lost its lease before it got there.
  return c.visibility.mode === 'immediate' ? 2_000 : 2 * (2 * c.visibility.maxLagMs + 1_000);
}

/** Opens B once A's lease has expired (LEASE_HELD until then). */
async function takeOver(
  connector: Connector,
  state: Publisher['state'],
  leaseMs: number,
): Promise<Publisher> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await Publisher.open({ connector, state, holder: 'successor-b' });
    } catch (err) {
      if (!isRagfreshError(err, 'LEASE_HELD') || attempt > 200) throw err;
      await sleep(leaseMs / 4);
    }
  }
}

/**
 * A publishes x and r, then starts a batch (r replaced, n new) and pauses right after
 * journalling `pauseAt`, past its lease. B takes the lease, recovers (rolls A's batch back)
 * and publishes g alone: E -> E + 1. A wakes and carries on with its batch.
 */
async function pausedRun(ctx: CaseContext, pauseAt: JournalStep): Promise<string> {
  const c = ctx.corpus;
  const name = (doc: string) => `${pauseAt}-${doc}`;
  const x = c.generated(name('x'), 'v1', 3);
  const r1 = c.generated(name('r'), 'v1', 4);
  const r2 = c.generated(name('r'), 'v2', 2);
  const n = c.generated(name('n'), 'v1', 3);
  const g = c.generated(name('g'), 'v1', 2);
  const state = ctx.memoryState();
  const a = await ctx.openAnotherConnector();
  let release: () => void = () => undefined;
  let paused: () => void = () => undefined;
  const wake = new Promise<void>((resolve) => {
    release = resolve;
  });
  const pausedAt = new Promise<void>((resolve) => {
    paused = resolve;
  });
  // The documents A's batch changes, published before A takes its short lease.
  const first = await Publisher.open({ connector: a, state, holder: 'paused-a' });
  await first.publish([x, r1]);
  await first.close();
  const epoch = await a.readEpoch();
  const leaseMs = pausedLeaseMs(ctx.capabilities);
  let armed = true;
  const publisherA = await Publisher.open({
    connector: a,
    state,
    holder: 'paused-a',
    leaseTtlMs: leaseMs,
    hooks: {
      async beforeStep(step) {
        if (!armed || step !== pauseAt) return;
        armed = false;
        paused();
        await wake;
      },
    },
  });
  const batchA = publisherA.publish([r2, n]).then(
    () => undefined,
    (err: unknown) => err,
  );
  // A batch that ends before its pause (a store that fails A's staging or verification) never
  // pauses: the case fails now, with A's own error, rather than at its timeout.
  const early = await Promise.race([
    pausedAt.then(() => undefined),
    batchA.then((outcome) => ({ outcome })),
  ]);
  if (early !== undefined) {
    await publisherA.close().catch(() => undefined);
    throw new Error(
      `${pauseAt}: the publisher's batch ${
        early.outcome === undefined ? 'completed' : `failed with ${errorMessage(early.outcome)}`
      } before it reached ${pauseAt}, where it was to pause past its lease`,
    );
  }
  // B is another process: its own connector on the same namespace.
  const b = await ctx.openAnotherConnector();
  const publisherB = await takeOver(b, state, leaseMs);
  let outcome: unknown;
  try {
    const report = await publisherB.publish([g]);
    ctx.check(
      report.epoch === epoch + 1,
      `${pauseAt}: the successor published epoch ${report.epoch}, expected ${epoch + 1}`,
    );
    release();
    outcome = await batchA;
  } finally {
    release();
    await publisherB.close();
  }
  // Refused by the connector (its scope), not only later by the state store's journal check.
  const refused =
    isRagfreshError(outcome, 'LEASE_LOST') && outcome.scope === ctx.capabilities.store;
  ctx.check(
    refused,
    `${pauseAt}: the paused publisher woke after its successor took over and ${
      outcome === undefined
        ? 'published its batch'
        : `failed with ${errorMessage(outcome)}, not LEASE_LOST from the store`
    }: its first write must be refused by the store`,
  );
  const expected: ReadonlyArray<readonly [string, PublishCandidate | undefined, string]> = [
    [x.documentId, x, 'x'],
    [r1.documentId, r1, 'r'],
    [g.documentId, g, 'g'],
    [n.documentId, undefined, 'n'],
  ];
  const seen: string[] = [];
  await ctx.eventually(`${pauseAt}View`, async () => {
    seen.length = 0;
    const now = await b.readEpoch();
    ctx.check(now === epoch + 1, `${pauseAt}: the store holds epoch ${now}, expected ${epoch + 1}`);
    for (const [documentId, version, label] of expected) {
      const visible = await listInView(b, documentId, 'epoch');
      const want = version === undefined ? [] : version.chunks.map((ch) => ch.chunkId);
      seen.push(`${label}×${visible.length}`);
      ctx.check(
        sameMembers(visible, want),
        `${pauseAt}: epoch ${epoch + 1} shows ${visible.length} chunk(s) of document ${label}, expected ${want.length}${version === undefined ? ' (only the paused publisher staged it)' : ''}`,
      );
    }
    for (const [v, label] of [
      [r2, 'r v2'],
      [n, 'n'],
    ] as const) {
      const stored = await b.countChunks(v.documentId, v.versionId);
      ctx.check(
        stored === 0,
        `${pauseAt}: ${stored} chunk(s) of the paused publisher's ${label} are stored`,
      );
    }
  });
  await publisherA.close();
  return `${pauseAt}: ${refused ? 'refused' : 'accepted'}, epoch ${epoch + 1} ${seen.join(' ')}`;
}

export const pausedPublisher: ConformanceCase = {
  id: 'paused-publisher',
  title: 'a publisher paused past its lease cannot write after its successor took over',
  guarantee:
    'Publisher A (a lease of 2 s, or twice the verification budget on eventual stores) pauses past its lease inside a batch (once before staging, once before the epoch move); B takes the lease on another connector, which raises the fence in the store, recovers A\u2019s batch and publishes E -> E + 1. When A wakes, its next store write (stage, validity patch or epoch move) is refused with LEASE_LOST by the connector, and epoch E + 1 holds exactly what B published: no document lost, none gained, no chunk of A stored.',
  whenItFails:
    "The fence must reach the store: Publisher.open calls raiseFence(lease.fence) before recovering, and every write hook refuses a fence older than the store's (fencing 'store': in the same transaction or conditional write as the write, throwing this.staleFence(fence, held); 'client': the base class checks _readFence before the hook). _readFence must read the store, not a value cached in this instance (B writes through another connector).",
  appliesTo: (c) => c.fencing !== undefined && c.fencing !== 'none',
  declared: (c) => `${c.fencing} fencing: stale writes refused, epoch E+1 exact`,
  timeoutMs: 120_000,
  async run(ctx) {
    const summary: string[] = [];
    for (const pauseAt of ['staging', 'promoting'] as const)
      summary.push(await pausedRun(ctx, pauseAt));
    ctx.observed(summary.join('; '));
  },
};

/** Chunks the scan case writes: 4 versions of 7, so pages of 4 cut across versions. */
const SCAN_VERSIONS = 4;
const SCAN_CHUNKS = 7;
const SCAN_PAGE = 4;

export const scanPages: ConformanceCase = {
  id: 'scan-pages',
  title: 'a scan spanning several pages returns every chunk exactly once',
  guarantee: `scanChunks({ pageSize: ${SCAN_PAGE} }) over ${SCAN_VERSIONS * SCAN_CHUNKS} chunks (published, replaced and staged) returns each stored chunk exactly once, across more than one page, and the same set as a single large page: what verify and recover read.`,
  whenItFails:
    '_scan must return `next` until the last page (a page shorter than pageSize is not the end unless the store says so) and resume strictly after the cursor: a scan that stops after its first page, or repeats the cursor row, fails here.',
  appliesTo: (c) => c.scan === true,
  declared: () => 'every chunk once, several pages',
  async run(ctx) {
    const connector = await ctx.connector();
    const publisher = await ctx.publisher();
    const c = ctx.corpus;
    const first = [0, 1].map((i) => c.generated(`scan-${i}`, 'v1', SCAN_CHUNKS));
    await publisher.publish(first);
    const replaced = c.generated('scan-0', 'v2', SCAN_CHUNKS);
    await publisher.publish([replaced]);
    const epoch = await connector.readEpoch();
    const staged = c.generated('scan-2', 'v1', SCAN_CHUNKS);
    await connector.upsert(staged.chunks.map((ch) => toStoredChunk(ch, epoch + 1)));
    // scan-0 v1 stays stored until the grace epoch passes: 4 versions of 7 chunks.
    const expected = [first[0]!, first[1]!, replaced, staged].flatMap((v) =>
      v.chunks.map((ch) => ch.chunkId),
    );
    const scan = async (pageSize: number) => {
      const ids: string[] = [];
      let pages = 0;
      for await (const page of connector.scanChunks({ pageSize })) {
        pages++;
        ids.push(...chunkIdsOf(page));
      }
      return { ids, pages };
    };
    let small = { ids: [] as string[], pages: 0 };
    await ctx.eventually('scanned', async () => {
      small = await scan(SCAN_PAGE);
      const whole = await scan(1_000);
      const counts = new Map<string, number>();
      for (const id of small.ids) counts.set(id, (counts.get(id) ?? 0) + 1);
      const missing = expected.filter((id) => !counts.has(id));
      const twice = [...counts].filter(([, k]) => k > 1).map(([id]) => id);
      const foreign = [...counts.keys()].filter((id) => !expected.includes(id));
      ctx.check(
        missing.length === 0,
        `a scan in pages of ${SCAN_PAGE} missed ${missing.length} of ${expected.length} chunks (${small.pages} page(s)), e.g. ${missing[0]}`,
      );
      ctx.check(twice.length === 0, `${twice.length} chunk(s) came back twice, e.g. ${twice[0]}`);
      ctx.check(
        foreign.length === 0,
        `the scan returned ${foreign.length} chunk(s) nobody wrote, e.g. ${foreign[0]}`,
      );
      ctx.check(
        small.pages > 1,
        `${small.ids.length} chunks came in ${small.pages} page(s) of at most ${SCAN_PAGE}`,
      );
      ctx.check(
        sameMembers(whole.ids, expected),
        `one large page holds ${whole.ids.length} chunks, expected ${expected.length}`,
      );
    });
    ctx.observe('pages', small.pages);
    ctx.observe('chunks', small.ids.length);
    ctx.observed(`${small.ids.length} of ${expected.length} chunks in ${small.pages} pages`);
  },
};
