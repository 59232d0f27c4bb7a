import { type DocumentRecord, InMemoryStateStore } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';
import { suggestContracts } from '../src/contracts.js';
import { resolveConfig } from '../src/index.js';
import { EXIT, goneWaitLine, sourceStatuses, statusExitCode } from '../src/status.js';

const config = resolveConfig(
  {
    userAgent: 'bot/1.0 (+https://example.org/bot)',
    sources: [{ id: 'docs', urls: ['https://docs.example.org/a'], every: '1h' }],
    deletion: { goneChecks: 3, minGoneAge: '48h' },
    fetch: { allow: ['127.0.0.1:8080', 'docs.internal', '10.1.2.0/24'] },
  },
  '/tmp',
);

const record = (id: string, extra: Partial<DocumentRecord> = {}): DocumentRecord => ({
  documentId: id,
  sourceId: 'docs',
  url: `https://docs.example.org/${id}`,
  status: 'healthy',
  statusReasons: [],
  currentVersionId: `v-${id}`,
  currentChunkIds: [`${id}#0`],
  textChars: 1000,
  timestamps: { retrievedAt: new Date().toISOString() },
  lastGoodAt: new Date().toISOString(),
  ...extra,
});

describe('status a cron job can trust', () => {
  it('a source that never indexed anything is a violated objective (exit 3)', async () => {
    const statuses = await sourceStatuses(config, new InMemoryStateStore());
    expect(statuses[0]!.state).toBe('empty');
    expect(statusExitCode(statuses)).toBe(EXIT.objectiveViolated);
  });

  it('pending review items are counted by kind and reason (exit 5); quarantine wins (exit 4)', async () => {
    const state = new InMemoryStateStore();
    await state.putDocument(record('a'));
    await state.putReviewItem({
      id: 'delete:a',
      kind: 'deletion',
      documentId: 'a',
      sourceId: 'docs',
      url: 'https://docs.example.org/a',
      reason: 'confirmed-gone',
      evidence: [],
      createdAt: new Date().toISOString(),
      status: 'pending',
    });
    const statuses = await sourceStatuses(config, state);
    expect(statuses[0]!.review).toEqual({ 'deletion/confirmed-gone': 1 });
    expect(statusExitCode(statuses)).toBe(EXIT.reviewPending);
    await state.putDocument(record('b', { status: 'quarantined', statusReasons: ['shrink'] }));
    expect(statusExitCode(await sourceStatuses(config, state))).toBe(EXIT.quarantined);
  });

  it('pending gone evidence says what it waits for: checks, minGoneAge, the next run', async () => {
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const line = goneWaitLine(
      record('g', { goneCount: 2, goneSince: since }),
      config.settings.deletion,
      '2030-01-01T00:00:00.000Z',
    );
    expect(line).toMatch(
      /gone 2 of 3 checks since .*; waits for 1 more check\(s\) and minGoneAge until .*, next check after 2030-01-01/,
    );
    const enough = goneWaitLine(
      record('g', { goneCount: 4, goneSince: '2020-01-01T00:00:00.000Z' }),
      config.settings.deletion,
      undefined,
    );
    expect(enough).toMatch(
      /gone 4 of 3 checks since 2020-01-01T00:00:00.000Z; waits for the next run/,
    );
  });

  it('contract thresholds come from the source history, not from memory', async () => {
    const state = new InMemoryStateStore();
    for (const [i, chars] of [800, 1200, 5000].entries())
      await state.putDocument(record(`p${i}`, { textChars: chars }));
    const [s] = await suggestContracts(config, state);
    expect(s).toMatchObject({ documents: 3, smallestChars: 800, medianChars: 1200, minChars: 400 });
    const [empty] = await suggestContracts(config, new InMemoryStateStore());
    expect(empty?.minChars).toBeUndefined();
  });

  it('fetch.allow entries are validated one by one', () => {
    expect(config.settings.fetch.allow).toEqual(['127.0.0.1:8080', 'docs.internal', '10.1.2.0/24']);
    expect(() =>
      resolveConfig({ ...config, dataDir: '/tmp/x', fetch: { allow: [''] } }, '/tmp'),
    ).toThrow(/config fetch\.allow\[0\]: "" is not an entry; use a host, host:port or CIDR/);
  });
});
