// pnpm bench:startup — issue 37 items 1 and 5: what `ragfresh --help` and `ragfresh status` cost
// in fresh processes, against a SQLite state of 100 and 10,000 documents on 20 sources, with the
// aggregates the state keeps (O(sources)) and with them dropped (status then recounts every
// record, what it did before they were kept). `status` is measured on a state whose records
// recorded no epoch (the state alone) and on one that did (status then reads the LanceDB
// store's epoch: through the connector's light probe, which reads the epoch file and loads no
// LanceDB, and, with the epoch file removed as in an index written before it existed, by
// opening the store, which loads LanceDB). Prints the median CPU of RUNS processes (default 7)
// and the targets met or missed. SIZES=100,10000 picks the state sizes.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { epochFilePath } from '@ragfresh/connector-lancedb';
import { DocumentLedger, type KeyvStateStore, openStateStore } from '@ragfresh/core';
import { loadConfig } from '../dist/config.js';
import { openConnector } from '../dist/runtime.js';
import { measureStart, type StartTime } from './phase-process.ts';

const RUNS = Number(process.env.RUNS ?? 7);
const SIZES = (process.env.SIZES ?? '100,10000').split(',').map(Number);
const SOURCES = 20;
const STATUS_TARGET_MS = 250;
const HELP_TARGET_MS = 120;
const CLI_BIN = fileURLToPath(new URL('../bin/ragfresh.js', import.meta.url));
// status exits 3 (objective violated: the seeded observations are a day old) and that is fine.
const STATUS_OK = [0, 3, 4, 5];

/** A state of `documents` published records on SOURCES sources; `epoch` 0 records no epoch. */
async function seed(state: KeyvStateStore, documents: number, epoch: number): Promise<void> {
  const day = Date.now() - 24 * 3600_000;
  const ledger = new DocumentLedger(state);
  await ledger.ensureAggregates();
  for (let i = 0; i < documents; i++) {
    const sourceId = `host-${i % SOURCES}`;
    const documentId = `${sourceId}:${i.toString(16).padStart(24, '0')}`;
    const at = new Date(day + i * 1000).toISOString();
    await ledger.published(
      undefined,
      {
        documentId,
        sourceId,
        versionId: `v${i}`,
        chunkIds: [`${documentId}#v${i}#0`, `${documentId}#v${i}#1`],
        action: 'publish',
        url: `https://host-${i % SOURCES}.example/page-${i}`,
        contentHash: `h${i}`,
        textChars: 4000,
        chunkHashes: ['a'.repeat(64), 'b'.repeat(64)],
        retrievedAt: at,
        validators: { etag: `"e${i}"` },
      },
      epoch,
      at,
    );
  }
}

interface Row {
  readonly what: string;
  readonly time: StartTime;
  readonly target: number;
}

async function statusRows(documents: number, withEpoch: boolean): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'ragfresh-startup-'));
  try {
    const dataDir = join(dir, '.ragfresh');
    mkdirSync(dataDir, { recursive: true });
    const configPath = join(dir, 'ragfresh.config.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        userAgent: 'ragfresh-bench/0.1 (+https://example.org/bot)',
        dataDir,
        state: `sqlite:${join(dataDir, 'state.sqlite')}`,
        sources: Array.from({ length: SOURCES }, (_, i) => ({
          id: `host-${i}`,
          urls: [`https://host-${i}.example/`],
        })),
      }),
    );
    const state = await openStateStore(`sqlite:${join(dataDir, 'state.sqlite')}`);
    await seed(state, documents, withEpoch ? 1 : 0);
    if (withEpoch) {
      // The store at the state's epoch, so status reads it and finds it intact.
      const connector = await openConnector(await loadConfig(configPath));
      await connector.raiseFence(1);
      await connector.advanceEpoch(0, 1, { fence: 1 });
      await connector.close();
    }
    const where = withEpoch ? 'the state + the LanceDB epoch (probe)' : 'the state alone';
    const rows: Row[] = [];
    const args = [CLI_BIN, 'status', '--config', configPath];
    rows.push({
      what: `status, ${documents} docs, ${where}, aggregates kept`,
      time: await measureStart(args, RUNS, STATUS_OK),
      target: STATUS_TARGET_MS,
    });
    if (withEpoch) {
      // An index written before the epoch file: the probe cannot tell, status opens the store.
      const file = epochFilePath(join(dataDir, 'lancedb'), 'ragfresh');
      const kept = readFileSync(file);
      rmSync(file);
      rows.push({
        what: `status, ${documents} docs, the state + the LanceDB epoch, no epoch file (full read), aggregates kept`,
        time: await measureStart(args, RUNS, STATUS_OK),
        target: STATUS_TARGET_MS,
      });
      writeFileSync(file, kept);
    }
    // What a state without aggregates costs: status recounts every record.
    await state.backend.delete(state.keys.aggregatesBuilt());
    rows.push({
      what: `status, ${documents} docs, ${where}, recounted (no aggregates)`,
      time: await measureStart(args, RUNS, STATUS_OK),
      target: STATUS_TARGET_MS,
    });
    await state.close();
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows: Row[] = [
  { what: '--help', time: await measureStart([CLI_BIN, '--help'], RUNS), target: HELP_TARGET_MS },
];
for (const size of SIZES) rows.push(...(await statusRows(size, false)));
rows.push(...(await statusRows(SIZES[SIZES.length - 1]!, true)));

const verdict = (r: Row) =>
  r.time.cpuMs <= r.target
    ? `met (${Math.round(r.target - r.time.cpuMs)} ms to spare)`
    : `MISSED by ${Math.round(r.time.cpuMs - r.target)} ms`;
const width = Math.max(...rows.map((r) => r.what.length));
console.log(
  `\nCLI start-up, median of ${RUNS} fresh processes (node ${process.version}, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ')}); CPU = user+system of the process\n`,
);
console.log(`${'command'.padEnd(width)}  wall ms  CPU ms  target  verdict`);
for (const r of rows)
  console.log(
    `${r.what.padEnd(width)}  ${String(Math.round(r.time.wallMs)).padStart(7)}  ${String(Math.round(r.time.cpuMs)).padStart(6)}  ${`≤ ${r.target}`.padStart(6)}  ${verdict(r)}`,
  );
