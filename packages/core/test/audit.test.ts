import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { AUDIT_GENESIS, FileAuditLog, verifyAuditLines } from '../src/audit.js';

let dir: string;
let log: FileAuditLog;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ragfresh-audit-'));
  log = new FileAuditLog(join(dir, 'audit.jsonl'));
  await log.append({ action: 'removed', by: 'alice', reason: 'takedown', documents: ['s:1'] });
  await log.append({ action: 'review-approved', by: 'bob', documents: ['s:2'] });
  await log.append({ action: 'removal-undone', by: 'carol', documents: ['s:1'] });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const lines = () => readFileSync(log.path, 'utf8').split('\n');

it('chains each entry to the one before and verifies an untouched log', () => {
  const v = log.verify();
  expect(v.ok).toBe(true);
  expect(v.entries.map((e) => e.seq)).toEqual([1, 2, 3]);
  expect(v.entries[0]!.prev).toBe(AUDIT_GENESIS);
  expect(v.entries[1]!.prev).toBe(v.entries[0]!.hash);
  expect(v.entries[2]!.prev).toBe(v.entries[1]!.hash);
});

it('names the first bad line: an edited entry, a deleted one, a reordered pair', () => {
  const edited = lines();
  edited[1] = edited[1]!.replace('"by":"bob"', '"by":"eve"');
  expect(verifyAuditLines(edited)).toMatchObject({ ok: false, line: 2, problem: /its hash/ });
  const deleted = lines();
  deleted.splice(1, 1);
  expect(verifyAuditLines(deleted)).toMatchObject({ ok: false, line: 2, problem: /seq 3/ });
  const swapped = lines();
  [swapped[0], swapped[1]] = [swapped[1]!, swapped[0]!];
  expect(verifyAuditLines(swapped)).toMatchObject({ ok: false, line: 1 });
});

it('appends after a reopen extend the same chain', async () => {
  const again = new FileAuditLog(log.path);
  const e = await again.append({ action: 'migration', by: 'ops' });
  expect(e.seq).toBe(4);
  expect(again.verify().ok).toBe(true);
});
