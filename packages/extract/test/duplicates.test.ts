import { describe, expect, it } from 'vitest';
import { duplicateGroupIds, extractPage, hammingDistance, simhash64 } from '../src/index.js';

const template = (title: string, body: string, footer: string, extra = '') =>
  `<!doctype html><html><head><title>${title} | Example Storage</title></head><body>
<header><nav><a href="/">Home</a> <a href="/docs">Docs</a> <a href="/pricing">Pricing</a></nav></header>
<main><h1>${title}</h1>${body}${extra}</main>
<footer><p>${footer}</p><p>© Example Storage. Terms. Privacy.</p></footer></body></html>`;

const para = (seed: string, n: number) =>
  Array.from(
    { length: n },
    (_, i) =>
      `<p>${seed} ${i}: replicas are placed in separate zones, checked on every read, and rebuilt from a healthy copy when their checksum fails; operators see each repair in the audit log with the node, the object and the time.</p>`,
  ).join('');

const fingerprint = (html: string) => simhash64(extractPage(html).markdown);

describe('near-duplicate groups across URLs', () => {
  const body = para('Replication', 8);
  const page = template('Replication', body, 'Last updated 3 March 2026');
  const variants = {
    'https://storage.example/docs/replication': page,
    'https://storage.example/docs/replication/?utm_source=news': page,
    'https://storage.example/docs/replication?print=1': template(
      'Replication',
      body,
      'Printed 9 March 2026',
      '<p>Printed from storage.example</p>',
    ),
  };
  const otherBody = Array.from(
    { length: 8 },
    (_, i) =>
      `<p>Compaction step ${i} merges small segment files into larger ones overnight, drops tombstoned keys older than the grace period and rewrites the index so that reads touch fewer files.</p>`,
  ).join('');
  const other = template('Compaction', otherBody, 'Last updated 3 March 2026');
  const otherDate = template('Replication', body, 'Last updated 4 March 2026');

  it('measures the distances the default threshold (3 bits) separates', () => {
    const base = fingerprint(page);
    const d = (html: string) => hammingDistance(base, fingerprint(html));
    expect(d(otherDate)).toBeLessThanOrEqual(3); // a changed footer date
    expect(d(variants['https://storage.example/docs/replication?print=1'])).toBeLessThanOrEqual(3);
    expect(d(other)).toBeGreaterThan(10); // another page on the same template
  });

  it('the same page under three URL variants is one group; a different page on the template is not', () => {
    const items = [
      ...Object.entries(variants).map(([id, html]) => ({ id, fingerprint: fingerprint(html) })),
      { id: 'https://storage.example/docs/compaction', fingerprint: fingerprint(other) },
    ];
    const groups = duplicateGroupIds(items);
    const ids = Object.keys(variants).map((u) => groups.get(u));
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/^rf-dup:[0-9a-f]{16}$/);
    expect(groups.get('https://storage.example/docs/compaction')).not.toBe(ids[0]);
    // Order does not change the ids.
    expect(duplicateGroupIds([...items].reverse())).toEqual(groups);
  });
});
