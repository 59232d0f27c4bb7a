import {
  CASES,
  embed,
  formatReport,
  runConformanceSuite,
  runSuite,
  SUITE_VERSION,
  type TestRunner,
} from '@ragfresh/conformance';
import { BROKEN_CONNECTORS } from '@ragfresh/conformance/broken';
import { MemoryConnector } from '@ragfresh/connector-memory';
import { fixture as memoryFixture } from '@ragfresh/connector-memory/fixture';
import type { ConnectorCapabilities, StoreFixture } from '@ragfresh/core';
import { describe, expect, it } from 'vitest';

/** A runner that records what the suite registers, so single cases can be invoked by hand. */
function recordingRunner() {
  const tests = new Map<string, (context?: unknown) => Promise<void>>();
  const hooks: { before: Array<() => Promise<void>>; after: Array<() => Promise<void>> } = {
    before: [],
    after: [],
  };
  const describes: string[] = [];
  const runner: TestRunner = {
    describe: (name, fn) => {
      describes.push(name);
      fn();
    },
    it: (name, fn) => {
      tests.set(name.split(':')[0]!, fn);
    },
    beforeAll: (fn) => {
      hooks.before.push(fn);
    },
    afterAll: (fn) => {
      hooks.after.push(fn);
    },
  };
  return { runner, tests, hooks, describes };
}

function redeclared(capabilities: Partial<ConnectorCapabilities>): StoreFixture {
  return {
    store: 'memory-redeclared',
    async start() {
      const target = await memoryFixture.start();
      return { ...target, createConnector: async () => new MemoryConnector({ capabilities }) };
    },
  };
}

describe('runConformanceSuite with an injected runner', () => {
  it('registers every case under one describe naming the suite version and store', () => {
    const r = recordingRunner();
    runConformanceSuite({ fixture: memoryFixture, runner: r.runner });
    expect(r.describes).toEqual([`ragfresh conformance ${SUITE_VERSION}: memory`]);
    expect([...r.tests.keys()]).toEqual(CASES.map((c) => c.id));
    expect(r.hooks.before).toHaveLength(1);
    expect(r.hooks.after).toHaveLength(1);
  });

  it('skips a case the manifest rules out through the runner context', async () => {
    const r = recordingRunner();
    runConformanceSuite({ fixture: redeclared({ epochInStore: false }), runner: r.runner });
    await r.hooks.before[0]!();
    try {
      const notes: string[] = [];
      await r.tests.get('epoch-in-store')!({ skip: (note: string) => notes.push(note) });
      expect(notes).toEqual(['not applicable to the declared capabilities']);
    } finally {
      await r.hooks.after[0]!();
    }
  });

  it('fails a case with the guarantee, the failures and where to look', async () => {
    const broken = BROKEN_CONNECTORS.find((b) => b.kind === 'staged-visible')!;
    const r = recordingRunner();
    runConformanceSuite({ fixture: broken.fixture, runner: r.runner });
    await r.hooks.before[0]!();
    try {
      await expect(r.tests.get('staged-invisible')!()).rejects.toThrow(
        /staged-invisible failed: Chunks staged[\s\S]*epoch readers saw \d+ staged chunk[\s\S]*declared: staged: 0 visible[\s\S]*when it fails: The connector's view filter/,
      );
      await expect(r.tests.get('sentinel-empty')!()).resolves.toBeUndefined();
    } finally {
      await r.hooks.after[0]!();
    }
  });
});

describe('suite building blocks', () => {
  it('embeddings are deterministic unit vectors computed from the text', () => {
    const a = embed('hello');
    expect(a).toEqual(embed('hello'));
    expect(a).toHaveLength(12);
    expect(a).not.toEqual(embed('hello!'));
    expect(Math.hypot(...a)).toBeCloseTo(1, 4);
  });

  it('every case states a guarantee and what to check, with a unique id', () => {
    expect(new Set(CASES.map((c) => c.id)).size).toBe(CASES.length);
    for (const c of CASES) {
      expect(c.id).toMatch(/^[a-z0-9-]+$/);
      expect(c.guarantee.length).toBeGreaterThan(40);
      expect(c.whenItFails.length).toBeGreaterThan(40);
    }
    expect(CASES[0]!.id).toBe('sentinel-empty');
    expect(CASES.at(-1)!.id).toBe('sentinel-isolated');
  });

  it('formats a report headed by store, target, suite version and manifest', async () => {
    const report = await runSuite({ fixture: memoryFixture, cases: ['sentinel-empty'] });
    const text = formatReport(report);
    expect(text.split('\n').slice(0, 4)).toEqual([
      'store:        memory',
      expect.stringMatching(/^target: {7}embedded — in-process memory connector/),
      `suite:        @ragfresh/conformance ${SUITE_VERSION}`,
      'capabilities: promotion=snapshot flagPromotion=overlap visibility=immediate maxWriteBatch=500 epochInStore=true idForm=chunk-id',
    ]);
    expect(text).toMatch(
      /^sentinel-empty\s+pass\s+starts; fresh namespace empty, epoch 0\s+epoch 0, 0 chunks\s+\d+$/m,
    );
    expect(text).toMatch(/PASS: 1 passed, 0 failed, 0 skipped/);
  });
});
