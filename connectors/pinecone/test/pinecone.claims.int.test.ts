// Epoch claims that cannot wedge (issue 32): a fault at every request of advanceEpoch — a dropped
// connection, a 5xx, a timeout (applied, never answered), SIGKILL of the process — and the next
// publisher still advances. Real Pinecone client against the wire emulator (no Pinecone engine
// runs here; docs/connectors/pinecone.md says what that proves).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isRagfreshError } from '@ragfresh/core';
import {
  type FaultRequest,
  type PineconeEmulator,
  type ScriptedFault,
  startPineconeEmulator,
} from '@ragfresh/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPineconeConnector,
  EPOCH_CLAIM_PREFIX,
  EPOCH_TOKEN_KEY,
  EPOCH_VALUE_KEY,
  EPOCH_VECTOR_ID,
  epochNamespace,
  type PineconeConnector,
  type PineconeConnectorOptions,
} from '../src/index.js';
import { DIMS } from './support.js';

/** Short bounds so a dead claim expires in a fraction of a second. */
const FAST = {
  maxLagMs: 100,
  claimExpiryMs: 1_600,
  timeoutMs: 400,
  retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 5 },
} as const;

interface Env {
  readonly emu: PineconeEmulator;
  readonly host: string;
  options(namespace: string, extra?: Partial<PineconeConnectorOptions>): PineconeConnectorOptions;
  open(namespace: string, extra?: Partial<PineconeConnectorOptions>): Promise<PineconeConnector>;
}

async function env(lags?: { fetchMs: number; listMs: number; queryMs: number }): Promise<Env> {
  const emu = await startPineconeEmulator(lags === undefined ? {} : { lags });
  const host = await emu.createIndex('claims', DIMS);
  const options = (namespace: string, extra: Partial<PineconeConnectorOptions> = {}) => ({
    apiKey: `k-${new URL(emu.url).port}`,
    host,
    namespace,
    ...FAST,
    ...extra,
  });
  return {
    emu,
    host,
    options,
    async open(namespace, extra) {
      const c = createPineconeConnector(options(namespace, extra));
      await c.open({ dimensions: DIMS });
      return c;
    },
  };
}

/** Claims of `namespace` still stored (list path). */
async function claimsLeft(c: PineconeConnector, namespace: string): Promise<string[]> {
  const page = await c.pinecone
    .index({ host: (c.options as { host: string }).host, namespace: epochNamespace(namespace) })
    .listPaginated({ prefix: EPOCH_CLAIM_PREFIX });
  return (page.vectors ?? []).map((v) => v.id ?? '');
}

async function pointerOf(c: PineconeConnector, namespace: string) {
  const r = await c.pinecone
    .index({ host: (c.options as { host: string }).host, namespace: epochNamespace(namespace) })
    .fetch({ ids: [EPOCH_VECTOR_ID] });
  return r.records[EPOCH_VECTOR_ID]?.metadata ?? {};
}

async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return isRagfreshError(err) ? err.code : String(err);
  }
}

/** Requests of one clean advanceEpoch, in order ("POST /vectors/update", ...). */
async function cleanSequence(e: Env): Promise<string[]> {
  const c = await e.open('clean');
  const seen: string[] = [];
  e.emu.faults.intercept((r) => {
    seen.push(`${r.method} ${r.path}`);
    return undefined;
  });
  await c.advanceEpoch(0, 1);
  e.emu.faults.intercept(undefined);
  return seen;
}

/** From the k-th request on (1-based), every request gets `fault` (an outage that starts there). */
function outageFrom(k: number, fault: (r: FaultRequest) => ScriptedFault) {
  let n = 0;
  return (r: FaultRequest): ScriptedFault | undefined => (++n >= k ? fault(r) : undefined);
}

interface CaseResult {
  readonly k: number;
  readonly request: string;
  readonly first: string;
  readonly leftClaims: number;
  readonly leftWithoutLsn: number;
  readonly pointerAfterFault: number;
  readonly next: string;
  readonly epoch: number;
  readonly claimsAfter: number;
}

/**
 * One case: `fault` runs A's advanceEpoch(0, 1) with the k-th request on faulted; then a second
 * publisher B (a fresh connector, as after a restart or a failover) advances from what it reads.
 */
async function faultCase(
  e: Env,
  namespace: string,
  k: number,
  request: string,
  fault: () => Promise<string>,
): Promise<CaseResult> {
  const b = await e.open(namespace);
  const first = await fault();
  e.emu.faults.intercept(undefined);
  const raw = await claimsLeft(b, namespace);
  const withoutLsn: string[] = [];
  const metas = await b.pinecone
    .index({ host: e.host, namespace: epochNamespace(namespace) })
    .fetch({ ids: raw.length === 0 ? ['none'] : raw });
  for (const id of raw)
    if (metas.records[id]?.metadata?.rf_claim_lsn === undefined) withoutLsn.push(id);
  const at = await b.readEpoch();
  const next = await outcome(b.advanceEpoch(at, at + 1));
  return {
    k,
    request,
    first,
    leftClaims: raw.length,
    leftWithoutLsn: withoutLsn.length,
    pointerAfterFault: at,
    next,
    epoch: await b.readEpoch(),
    claimsAfter: (await claimsLeft(b, namespace)).length,
  };
}

function expectProgress(results: readonly CaseResult[]): void {
  for (const r of results) {
    const where = `fault at request ${r.k} (${r.request}), A ended ${r.first}`;
    expect(r.next, where).toBe('ok');
    expect(r.epoch, where).toBe(r.pointerAfterFault + 1);
    expect(r.claimsAfter, where).toBe(0);
  }
}

describe('Pinecone epoch claims: a fault at every request of advanceEpoch, then progress', () => {
  let sequence: string[] = [];
  beforeAll(async () => {
    const e = await env();
    try {
      sequence = await cleanSequence(e);
    } finally {
      await e.emu.close();
    }
  });

  it('one clean move makes the requests the sweep faults (read, claim, publish LSN, decide, conditional pointer write, read-back, cleanup)', () => {
    expect(sequence).toEqual([
      'GET /vectors/fetch',
      'POST /query',
      'POST /vectors/upsert',
      'POST /vectors/update',
      'POST /query',
      'POST /vectors/update',
      'POST /query',
      'GET /vectors/fetch',
      'POST /vectors/delete',
    ]);
  });

  it.concurrent.each([
    ['drop', { kind: 'drop' }],
    ['5xx', { kind: '5xx' }],
    ['timeout', { kind: 'timeout' }],
  ] as const)(
    'an outage (%s) starting at each request: A fails or finishes, the next publisher advances and no claim is left',
    async (name, fault) => {
      const e = await env();
      try {
        const results: CaseResult[] = [];
        for (let k = 1; k <= sequence.length; k++) {
          const ns = `${name}-${k}`;
          const a = await e.open(ns);
          results.push(
            await faultCase(e, ns, k, sequence[k - 1]!, async () => {
              e.emu.faults.intercept(outageFrom(k, () => fault));
              return outcome(a.advanceEpoch(0, 1));
            }),
          );
        }
        expectProgress(results);
        // The sweep reached the wedges of issue 32: W2 (claim written, its LSN never) at the
        // LSN publish, W1 (winning claim, pointer never moved) at the pointer write.
        // (A timeout is applied and never answered: the LSN publish and the pointer write land.)
        const w2 = results[3]!;
        const w1 = results[5]!;
        if (name !== 'timeout') {
          expect([w2.leftClaims, w2.leftWithoutLsn, w2.pointerAfterFault]).toEqual([1, 1, 0]);
          expect([w1.leftClaims, w1.leftWithoutLsn, w1.pointerAfterFault]).toEqual([1, 0, 0]);
          expect(w1.first).not.toBe('ok');
        } else {
          expect([w1.leftClaims, w1.pointerAfterFault]).toEqual([1, 1]);
        }
        expect(e.emu.faults.injected[name]).toBeGreaterThan(0);
      } finally {
        await e.emu.close();
      }
    },
  );

  it('SIGKILL of the publisher process at each request (after the request was applied): the next publisher advances', async () => {
    const e = await env();
    const dir = mkdtempSync(join(tmpdir(), 'rf-pinecone-kill-'));
    const script = join(dir, 'advance.mjs');
    writeFileSync(
      script,
      [
        'const { createPineconeConnector } = await import(process.argv[2]);',
        'const c = createPineconeConnector(JSON.parse(process.argv[3]));',
        'await c.open({ dimensions: Number(process.argv[4]) });',
        "process.stdout.write('open\\n');",
        "process.stdin.once('data', () => c.advanceEpoch(0, 1).then(() => process.exit(0), () => process.exit(1)));",
      ].join('\n'),
    );
    const dist = pathToFileURL(join(import.meta.dirname, '../dist/index.js')).href;
    try {
      const results: CaseResult[] = [];
      for (let k = 1; k <= sequence.length; k++) {
        const ns = `kill-${k}`;
        const child: ChildProcess = spawn(
          process.execPath,
          [script, dist, JSON.stringify(e.options(ns)), String(DIMS)],
          { stdio: ['pipe', 'pipe', 'inherit'] },
        );
        const exited = once(child, 'exit');
        child.stdout!.setEncoding('utf8');
        const opened = await Promise.race([
          once(child.stdout!, 'data').then(() => true),
          exited.then(() => false),
        ]);
        expect(opened, `the child publisher of case ${k} opened its connector`).toBe(true);
        results.push(
          await faultCase(e, ns, k, sequence[k - 1]!, async () => {
            let n = 0;
            e.emu.faults.intercept(() =>
              ++n === k ? { kind: 'timeout', afterApply: () => child.kill('SIGKILL') } : undefined,
            );
            child.stdin!.write('go\n');
            const [code, signal] = (await exited) as [number | null, string | null];
            return signal ?? `exit ${code}`;
          }),
        );
      }
      expect(results.map((r) => r.first)).toEqual(sequence.map(() => 'SIGKILL'));
      expectProgress(results);
      // Killed after the claim landed, before its LSN: W2; after the LSN, before the pointer: W1.
      expect([results[2]!.leftWithoutLsn, results[2]!.pointerAfterFault]).toEqual([1, 0]);
      expect([
        results[4]!.leftClaims,
        results[4]!.leftWithoutLsn,
        results[4]!.pointerAfterFault,
      ]).toEqual([1, 0, 0]);
    } finally {
      await e.emu.close();
    }
  });
});

describe('Pinecone epoch claims: expiry never hands the move to two publishers', () => {
  let e: Env;
  beforeAll(async () => {
    e = await env({ fetchMs: 10, listMs: 10, queryMs: 30 });
  });
  afterAll(async () => {
    await e.emu.close();
  });

  /** Holds the 2nd POST /vectors/update (A's pointer write, after its LSN publish). */
  function holdPointerWrite(hold: number | Promise<unknown>) {
    let updates = 0;
    e.emu.faults.intercept((r) => {
      if (r.method !== 'POST' || r.path !== '/vectors/update' || ++updates !== 2) return undefined;
      e.emu.faults.intercept(undefined);
      return { kind: 'none', hold };
    });
  }

  it('a live winner whose pointer write is slow is waited for: the rival gets EPOCH_CONFLICT once it lands', async () => {
    const a = await e.open('slow', { claimExpiryMs: 4_000 });
    const b = await e.open('slow', { claimExpiryMs: 4_000 });
    holdPointerWrite(400);
    const first = a.advanceEpoch(0, 1);
    await new Promise((r) => setTimeout(r, 150)); // A's claim is written and indexed
    const [ra, rb] = await Promise.all([outcome(first), outcome(b.advanceEpoch(0, 1))]);
    expect([ra, rb]).toEqual(['ok', 'EPOCH_CONFLICT']);
    expect(await b.readEpoch()).toBe(1);
  });

  it('a claimant past its expiry whose pointer write lands late matches nothing (conditional write); the by-id write the old code sent would have moved the pointer under the superseder', async () => {
    // A's own timeout outlasts the hold, so A does not retry the held write meanwhile.
    const a = await e.open('late', { claimExpiryMs: 10_000, timeoutMs: 10_000 });
    // B judges claims dead after 1 s: shorter than A's in-flight write (a misconfiguration or a
    // paused A), so B supersedes A while A's pointer write is still on its way.
    const b = await e.open('late', { claimExpiryMs: 1_000 });
    let bDone: () => void = () => {};
    holdPointerWrite(new Promise<void>((r) => (bDone = r)));
    const first = outcome(a.advanceEpoch(0, 1));
    await new Promise((r) => setTimeout(r, 150));
    const bOutcome = await outcome(b.advanceEpoch(0, 1));
    bDone(); // A's write arrives only now, after B's move is indexed
    expect(bOutcome).toBe('ok');
    const bToken = (await pointerOf(b, 'late'))[EPOCH_TOKEN_KEY];
    expect(await first).toBe('EPOCH_CONFLICT');
    const after = await pointerOf(b, 'late');
    expect([after[EPOCH_VALUE_KEY], after[EPOCH_TOKEN_KEY]]).toEqual([1, bToken]);
    // Control: the same late write sent by id, unconditionally, overwrites B's move.
    await a.pinecone
      .index({ host: e.host, namespace: epochNamespace('late') })
      .update({ id: EPOCH_VECTOR_ID, metadata: { [EPOCH_VALUE_KEY]: 1, [EPOCH_TOKEN_KEY]: 'a' } });
    await new Promise((r) => setTimeout(r, 50));
    expect((await pointerOf(b, 'late'))[EPOCH_TOKEN_KEY]).toBe('a');
  });

  it('a dead claim holds the move only for its expiry: the next publisher waits at least that long, then advances', async () => {
    const a = await e.open('dead', { claimExpiryMs: 2_000 });
    // W2: the claim lands, the LSN publish never does (the process is gone).
    e.emu.faults.intercept((r) => (r.path === '/vectors/update' ? { kind: 'drop' } : undefined));
    expect(await outcome(a.advanceEpoch(0, 1))).not.toBe('ok');
    e.emu.faults.intercept(undefined);
    const b = await e.open('dead', { claimExpiryMs: 2_000 });
    const t0 = performance.now();
    await b.advanceEpoch(0, 1);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(2_000);
    expect(await b.readEpoch()).toBe(1);
  });
});
