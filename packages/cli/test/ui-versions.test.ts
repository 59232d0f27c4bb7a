import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { documentId, sha256Hex } from '@ragfresh/core';
import { ExtractPipeline } from '@ragfresh/engine/pipeline';
import { FileRawSnapshotStore } from '@ragfresh/fetch';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VersionTexts } from '../src/ui/versions.js';

const URL_A = 'https://docs.example/a';
const page = (title: string, para: string) =>
  `<html><head><title>${title}</title></head><body><main><h1>${title}</h1><p>${para} ${'More words about rate limits and quotas. '.repeat(12)}</p></main></body></html>`;
const meta = (url: string, fetchedAt: string) => ({
  url,
  finalUrl: url,
  status: 200,
  fetchedAt,
  headers: { 'content-type': 'text/html; charset=utf-8' },
  contentType: 'text/html; charset=utf-8',
});

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ragfresh-ui-versions-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('VersionTexts over the packed raw snapshot store', () => {
  it("lists a URL's kept versions newest first, extracted; another URL's stay out; a missing digest says so", async () => {
    const writer = new FileRawSnapshotStore(join(dir, 'raw'));
    const enc = (s: string) => new TextEncoder().encode(s);
    const older = await writer.put(
      enc(page('Limits', 'The limit is 10 requests.')),
      meta(URL_A, '2026-12-01T00:00:00.000Z'),
    );
    const newer = await writer.put(
      enc(page('Limits', 'The limit is 20 requests.')),
      meta(URL_A, '2026-12-02T00:00:00.000Z'),
    );
    await writer.put(
      enc(page('Other', 'Unrelated page.')),
      meta('https://docs.example/b', '2026-12-03T00:00:00.000Z'),
    );
    await writer.close();

    // A new process (the dashboard) reads what the refresh wrote.
    const store = new FileRawSnapshotStore(join(dir, 'raw'));
    const texts = new VersionTexts(store, new ExtractPipeline({}));
    const subject = { documentId: documentId('docs', URL_A), sourceId: 'docs', url: URL_A };
    const versions = await texts.ofUrl(subject);
    expect(versions.map((v) => v.digest)).toEqual([newer, older]);
    expect(versions[0]?.text).toContain('The limit is 20 requests.');
    expect(versions[1]?.text).toContain('The limit is 10 requests.');
    expect(new Set(versions.map((v) => v.versionId)).size).toBe(2);
    expect((await texts.byVersion(subject)).size).toBe(2);
    const missing = await texts.ofDigest(sha256Hex('never fetched'), subject);
    expect(missing.problem).toBe('its raw snapshot is not kept');
    await store.close();
  });
});
