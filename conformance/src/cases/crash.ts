import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type Connector,
  FIELDS,
  JOURNAL_STEPS,
  type JournalStep,
  type PublishCandidate,
  Publisher,
  reasonLine,
  type StateStore,
} from '@ragfresh/core';
import { type CrashJob, describeKillPoint, type KillPoint } from '../crash-job.js';
import { openSharedStateStore } from '../state.js';
import type { CaseContext, ConformanceCase } from '../types.js';
import {
  byVersion,
  describeVersions,
  listInView,
  readDocument,
  sameMembers,
  type ViewKind,
} from './helpers.js';

/** Built child script: the same relative path from src/cases (vitest) and dist/cases. */
const CHILD = fileURLToPath(new URL('../../dist/crash-child.js', import.meta.url));
const CHILD_TIMEOUT_MS = 30_000;
const LAST_ROLLBACK_STEP = JOURNAL_STEPS.indexOf('promoting');

interface ChildOutcome {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly output: string;
}

function runChild(jobPath: string): Promise<ChildOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, jobPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_TIMEOUT_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output: output.trim().slice(-600) });
    });
  });
}

function versionName(names: ReadonlyMap<string, string>, v: string | undefined): string {
  return v === undefined ? 'none' : (names.get(v) ?? v);
}

/** Whether recovery must roll forward (the epoch advanced before the kill); undefined: either. */
function rollsForward(k: KillPoint): boolean | undefined {
  if (k.kind === 'step') return JOURNAL_STEPS.indexOf(k.step) > LAST_ROLLBACK_STEP;
  return k.when === 'during' ? undefined : k.when === 'after';
}

/**
 * Publishes a batch in a child, kills it at `killAt`, recovers with a new Publisher and
 * publishes again. `prefix` names the documents, so several crashes can share one namespace.
 * Returns the summary of what recovery did.
 */
async function crashAt(ctx: CaseContext, killAt: KillPoint, prefix = ''): Promise<string> {
  const where = describeKillPoint(killAt);
  // The journal records "promoting" before the epoch advance runs.
  const journalled: JournalStep = killAt.kind === 'step' ? killAt.step : 'promoting';
  if (!existsSync(CHILD)) {
    throw new Error(
      `${CHILD} is missing: crash cases run built code; build first (npx -y pnpm@10 run build).`,
    );
  }
  const spec = ctx.target.connectorSpec(ctx.namespace);
  if (spec.module.startsWith('file:') && !existsSync(fileURLToPath(spec.module))) {
    throw new Error(
      `connector module ${spec.module} is missing; build the connector package first.`,
    );
  }
  const dir = ctx.tempDir();
  const statePath = join(dir, 'state.sqlite');
  const holder = `conformance-crash-${ctx.namespace}`;
  const graceEpochs = 1;
  const c = ctx.corpus;
  const doc = (label: string, version: string, chunks: number) =>
    c.generated(`${prefix}${label}`, version, chunks);

  // Before: a, b, d current at v1; "stay" is not part of the crashed batch.
  const before = {
    a: doc('a', 'v1', 4),
    b: doc('b', 'v1', 3),
    d: doc('d', 'v1', 2),
    stay: doc('stay', 'v1', 2),
  };
  // The crashed batch: a shrinks, b grows, c is new, d is removed. The next batch republishes
  // a and c only, so b and d prove the recovery left them right for later epochs too.
  const batch = {
    a: doc('a', 'v2', 2),
    b: doc('b', 'v2', 5),
    c: doc('c', 'v2', 3),
  };
  const after = {
    a: doc('a', 'v3', 3),
    c: doc('c', 'v3', 2),
  };
  const names = new Map<string, string>();
  for (const [label, set] of [
    ['v1', before],
    ['v2', batch],
    ['v3', after],
  ] as const) {
    for (const v of Object.values(set) as PublishCandidate[]) names.set(v.versionId, label);
  }

  let state: StateStore = await openSharedStateStore(statePath);
  ctx.observe('stateStore', state.kind);
  const writer = await ctx.connector();
  let publisher = await Publisher.open({ connector: writer, state, holder, graceEpochs });
  await publisher.publish(Object.values(before));
  await publisher.close();
  await state.close();

  const job: CrashJob = {
    spec,
    dimensions: ctx.dimensions,
    statePath,
    holder,
    killAt,
    graceEpochs,
    candidates: Object.values(batch),
    removals: [{ documentId: before.d.documentId, reason: 'conformance: crash batch removal' }],
  };
  const jobPath = join(dir, 'job.json');
  writeFileSync(jobPath, JSON.stringify(job));
  const child = await ctx.time('child', () => runChild(jobPath));
  ctx.observe('childSignal', child.signal ?? `exit ${child.code}`);
  if (child.signal !== 'SIGKILL') {
    ctx.check(
      false,
      `the child was not killed at ${where} (exit ${child.code}, signal ${child.signal}): ${child.output}`,
    );
    return `not killed at ${where}`;
  }

  // Restart: a new connector and state store, a new Publisher that recovers the journal.
  state = await openSharedStateStore(statePath);
  const journal = await state.getJournal();
  ctx.observe('journalStepAtRestart', journal?.step ?? 'none');
  ctx.check(
    journal?.step === journalled,
    `the journal holds step ${journal?.step ?? 'none'} after a kill at ${where}, expected ${journalled}`,
  );
  const reader: Connector = await ctx.openAnotherConnector();
  try {
    publisher = await ctx.time('recover', () =>
      Publisher.open({ connector: reader, state, holder, graceEpochs }),
    );
    ctx.check(
      (await state.getJournal()) === undefined,
      'the journal is still present after recovery',
    );

    // A kill inside the advance may land before or after the store moved: recovery decides.
    const rolledForward =
      rollsForward(killAt) ??
      (await state.getDocument(before.a.documentId))?.currentVersionId === batch.a.versionId;
    ctx.observe('recovery', rolledForward ? 'rolled-forward' : 'rolled-back');
    const expectVersion: Record<string, string | undefined> = rolledForward
      ? {
          a: batch.a.versionId,
          b: batch.b.versionId,
          c: batch.c.versionId,
          d: undefined,
          stay: before.stay.versionId,
        }
      : {
          a: before.a.versionId,
          b: before.b.versionId,
          c: undefined,
          d: before.d.versionId,
          stay: before.stay.versionId,
        };
    const docIds: Record<string, string> = {
      a: before.a.documentId,
      b: before.b.documentId,
      c: batch.c.documentId,
      d: before.d.documentId,
      stay: before.stay.documentId,
    };
    /** Every document: state record, epoch and flag views, listing; no orphan anywhere. Returns a summary. */
    const inspectDocuments = async (
      expectVersion: Record<string, string | undefined>,
      when: string,
    ): Promise<string[]> => {
      const current = new Map<string, string>();
      const summary: string[] = [];
      for (const [label, docId] of Object.entries(docIds)) {
        const record = await state.getDocument(docId);
        const recorded = record?.currentVersionId;
        summary.push(`${label}=${versionName(names, recorded)}`);
        ctx.check(
          recorded === expectVersion[label],
          `document ${label}: state records ${versionName(names, recorded)}, expected ${versionName(names, expectVersion[label])} ${when}`,
        );
        if (recorded !== undefined) current.set(docId, recorded);
        const expectedIds = record?.currentChunkIds ?? [];
        const probe = (Object.values(before).find((v) => v.documentId === docId) ?? batch.c)
          .chunks[0]!.embedding;
        for (const kind of ['epoch', 'flag'] as ViewKind[]) {
          const hits = await readDocument(reader, docId, probe, 20, kind);
          const versions = byVersion(hits);
          const ok =
            (recorded === undefined && hits.length === 0) ||
            (versions.size === 1 &&
              versions.has(recorded ?? '') &&
              sameMembers(
                hits.map((h) => String(h.metadata[FIELDS.chunkId])),
                expectedIds,
              ));
          ctx.check(
            ok,
            `document ${label} ${when}: ${kind} readers see ${describeVersions(versions, names)}, state says ${versionName(names, recorded)} with ${expectedIds.length} chunks`,
          );
        }
        const listed = await listInView(reader, docId, 'epoch');
        ctx.check(
          sameMembers(listed, expectedIds),
          `document ${label} ${when}: listing the current view shows ${listed.length} chunks, expected ${expectedIds.length}`,
        );
      }
      for (const kind of ['epoch', 'flag'] as ViewKind[]) {
        const all =
          kind === 'epoch'
            ? await reader.searchCurrent(before.a.chunks[0]!.embedding, 200, {
                sourceId: c.sourceId,
              })
            : await reader.query(before.a.chunks[0]!.embedding, 200, {
                view: { kind: 'flag' },
                sourceId: c.sourceId,
              });
        const mine = new Set(Object.values(docIds));
        const orphans = all.filter(
          (h) =>
            mine.has(String(h.metadata[FIELDS.documentId])) &&
            current.get(String(h.metadata[FIELDS.documentId])) !== h.metadata[FIELDS.versionId],
        );
        ctx.observe(`${kind}Orphans`, orphans.length);
        ctx.check(
          orphans.length === 0,
          `${when}, ${orphans.length} orphan chunk(s) in the ${kind} view, e.g. ${orphans[0]?.metadata[FIELDS.chunkId]}`,
        );
      }
      return summary;
    };
    let summary: string[] = [];
    await ctx.eventually('recovered', async () => {
      summary = await inspectDocuments(expectVersion, `after a kill at ${where}`);
      if (!rolledForward) {
        for (const v of Object.values(batch)) {
          const left = await reader.countChunks(v.documentId, v.versionId);
          ctx.check(
            left === 0,
            `${left} staged chunk(s) of a rolled-back version are still stored (${v.documentId})`,
          );
        }
      }
    });

    // A further publication succeeds and becomes current.
    const next = await ctx.time('republish', () => publisher.publish(Object.values(after)));
    const bad = next.documents.filter((d) => d.outcome !== 'published');
    ctx.check(
      bad.length === 0,
      `publishing after recovery: ${bad.map((d) => `${d.documentId} ${d.outcome} ${d.reasons.map(reasonLine).join('; ')}`).join(', ')}`,
    );
    const expectAfter: Record<string, string | undefined> = {
      a: after.a.versionId,
      b: rolledForward ? batch.b.versionId : before.b.versionId,
      c: after.c.versionId,
      d: rolledForward ? undefined : before.d.versionId,
      stay: before.stay.versionId,
    };
    await ctx.eventually('republished', async () => {
      await inspectDocuments(expectAfter, 'after the further publication');
    });
    const outcome = `${rolledForward ? 'rolled forward' : 'rolled back'}: ${summary.join(' ')}`;
    ctx.observed(outcome);
    return outcome;
  } finally {
    await publisher.close();
    await state.close();
  }
}

const WHEN_IT_FAILS =
  "The connector's idempotency (every hook may run twice after a restart: _upsert overwrite, _patchValidityMany with { to: OPEN_EPOCH } on versions already open, _deleteVersions of absent data), _readEpoch reading the store after a restart, and the fixture's connectorSpec building the same namespace in another process from built code (module: new URL('../dist/index.js', import.meta.url); 'build the connector package first' means the child could not import it).";

function crashCase(
  id: string,
  killAt: Exclude<KillPoint, { readonly when: 'during' }>,
  title: string,
): ConformanceCase {
  const forward = rollsForward(killAt);
  return {
    id,
    title,
    guarantee: `A publisher SIGKILLed ${killAt.kind === 'step' ? `right after journalling "${killAt.step}"` : `${killAt.when} its compare-and-set of the epoch`} is recovered by the next Publisher.open: ${
      forward ? 'rolled forward to the new versions' : 'rolled back to the old versions'
    }, exactly one current version per document equal to the state record, complete, no orphan in the epoch or flag view, no lost document, and the next publication succeeds.`,
    whenItFails: WHEN_IT_FAILS,
    appliesTo: () => true,
    declared: () => (forward ? 'roll forward' : 'roll back'),
    timeoutMs: 90_000,
    run: async (ctx) => {
      await crashAt(ctx, killAt);
    },
  };
}

/** Turns into the advance at which claim-crash kills: from its first request to long after. */
const CLAIM_CRASH_TURNS = [0, 3, 12, 48] as const;

/**
 * Crashes inside the epoch advance itself. A store whose compare-and-set takes several
 * requests (a claim, then the pointer) must not be left with a claim nobody can complete or
 * supersede: whatever the kill left, the next publisher recovers and moves the epoch again.
 */
export const claimCrash: ConformanceCase = {
  id: 'claim-crash',
  title: 'a crash inside the epoch advance (between claim and pointer) does not wedge the store',
  guarantee: `A publisher SIGKILLed ${CLAIM_CRASH_TURNS.join(', ')} event-loop turns into advanceEpoch (before its first request, between a claim and the pointer write, or after the move) is recovered by the next Publisher.open (rolled back or forward, as the store decided), and that publisher's next batch moves the epoch and becomes current, each time.`,
  whenItFails:
    '_advanceEpoch must not leave state that blocks the next move from the same epoch: a claim whose pointer was never written must be completed or superseded by the next publisher (a higher fence wins), a claim without its confirmation must expire after a stated bound. EPOCH_CONFLICT for ever after one crash means the namespace stopped publishing.',
  appliesTo: () => true,
  declared: () => 'progress after every kill',
  timeoutMs: 300_000,
  async run(ctx) {
    const outcomes: string[] = [];
    for (const turns of CLAIM_CRASH_TURNS) {
      const outcome = await crashAt(ctx, { kind: 'advance', when: 'during', turns }, `t${turns}-`);
      outcomes.push(`${turns} turns: ${outcome.split(':')[0]}`);
    }
    ctx.observe('outcomes', outcomes);
    ctx.observed(outcomes.join('; '));
  },
};

/**
 * One case per journal step (the child is SIGKILLed right after the journal records it), and
 * two around the epoch advance inside "promoting": after the replaced versions were closed at
 * T but before the epoch moved (roll back must reopen them), and after it moved but before
 * "promoted" was journalled (roll forward).
 */
export const crashCases: ConformanceCase[] = [
  ...JOURNAL_STEPS.map((step) =>
    crashCase(
      `crash-at-${step}`,
      { kind: 'step', step },
      `crash at journal step "${step}" recovers`,
    ),
  ),
  crashCase(
    'crash-before-advance',
    { kind: 'advance', when: 'before' },
    'crash with old versions closed, epoch not yet advanced, recovers',
  ),
  crashCase(
    'crash-after-advance',
    { kind: 'advance', when: 'after' },
    'crash right after the epoch advance, before it is journalled, recovers',
  ),
];
