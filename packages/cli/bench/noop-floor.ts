// The floor of a no-change refresh, in its own process (see noop.bench.ts): for every document
// of the state, one state read and one conditional request with its stored validators, at the
// refresh's concurrency; `write: true` adds the record write main made per 304 (the cost the
// batched observations remove). Reports CPU per URL of the measured loop.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DocumentLedger, type DocumentRecord, openStateStore } from '@ragfresh/core';
import {
  type PhaseCost,
  peakRssMiB,
  phaseInput,
  startPhase,
  writePhaseResult,
} from './phase-process.ts';

export interface FloorInput {
  readonly dataDir: string;
  readonly concurrency: number;
  readonly write: boolean;
}

export interface FloorResult extends PhaseCost {
  readonly urls: number;
  readonly notModified: number;
}

// ragfresh's own HTTP client (undici), resolved from the fetch package that depends on it.
const fetchPackage = fileURLToPath(new URL('../../fetch/package.json', import.meta.url));
const { request } = (await import(createRequire(fetchPackage).resolve('undici'))) as {
  request(
    url: string,
    options: { readonly headers: Record<string, string> },
  ): Promise<{ readonly statusCode: number; readonly body: { dump(): Promise<void> } }>;
};

const input = phaseInput<FloorInput>();
const state = await openStateStore(`sqlite:${join(input.dataDir, 'state.sqlite')}`);
const ids: string[] = [];
for await (const r of state.listDocuments()) ids.push(r.documentId);
const ledger = new DocumentLedger(state);
let notModified = 0;
const stop = startPhase();
let next = 0;
async function worker(): Promise<void> {
  while (next < ids.length) {
    const record = (await state.getDocument(ids[next++]!)) as DocumentRecord;
    const headers: Record<string, string> = {};
    if (record.validators?.etag !== undefined) headers['if-none-match'] = record.validators.etag;
    if (record.validators?.lastModified !== undefined)
      headers['if-modified-since'] = record.validators.lastModified;
    const res = await request(record.url, { headers });
    await res.body.dump();
    if (res.statusCode !== 304) continue;
    notModified++;
    if (input.write)
      await ledger.observed(record, {
        validators: record.validators ?? {},
        retrievedAt: new Date().toISOString(),
      });
  }
}
await Promise.all(Array.from({ length: input.concurrency }, worker));
const cost = stop();
await state.close();
writePhaseResult({
  ...cost,
  peakRssMiB: peakRssMiB(),
  urls: ids.length,
  notModified,
} satisfies FloorResult);
