import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { type SimWeb, startSimWeb } from '../src/index.js';
import { raw } from './raw.js';

let sim: SimWeb | undefined;
afterEach(async () => {
  await sim?.stop();
  sim = undefined;
});

/** Runs `work` over `items` with at most `limit` in flight. */
async function pool<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await work(items[i] as T);
      }
    }),
  );
  return out;
}

describe('scale', () => {
  it('serves 2,000 pages over 20 hosts, then answers every revalidation with 304', async () => {
    sim = await startSimWeb({ seed: 20, hosts: 20, pagesPerHost: 100 });
    const urls = sim.urls();
    expect(urls).toHaveLength(2000);
    expect(new Set(urls.map((u) => new URL(u).origin)).size).toBe(20);
    // fetch keeps connections alive per origin, like a real crawler.
    const first = await pool(urls, 16, async (u) => {
      const res = await fetch(u);
      await res.arrayBuffer();
      return { status: res.status, etag: res.headers.get('etag') as string };
    });
    expect(first.every((r) => r.status === 200)).toBe(true);
    expect(new Set(first.map((r) => r.etag)).size).toBe(2000);
    const etags = new Map(urls.map((u, i) => [u, first[i]?.etag as string]));
    const second = await pool(urls, 16, async (u) => {
      const res = await fetch(u, { headers: { 'if-none-match': etags.get(u) as string } });
      await res.arrayBuffer();
      return res.status;
    });
    expect(second.every((s) => s === 304)).toBe(true);
    const log = sim.log();
    expect(log).toHaveLength(4000);
    expect(log.filter((e) => e.encoding === 'gzip')).toHaveLength(2000);
  });

  it('holds 10,000 URLs over 50 hosts with unique phrases and complete sitemaps', async () => {
    sim = await startSimWeb({ seed: 50, hosts: 50, pagesPerHost: 200 });
    const s = sim;
    const urls = s.urls();
    expect(urls).toHaveLength(10_000);
    expect(new Set(urls).size).toBe(10_000);
    const phrases = new Set<string>();
    let count = 0;
    for (const u of urls) {
      const facts = s.pageFacts(u);
      for (const p of [facts.phrase, ...facts.sections.map((x) => x.phrase)]) {
        phrases.add(p.split(' ')[0] as string);
        count++;
      }
    }
    expect(phrases.size).toBe(count);
    const listed = await pool(s.hosts(), 8, async (host) => {
      const origin = s.origin(host);
      const a = (await raw(`${origin}/sitemaps/pages-1.xml`)).body.toString();
      const b = gunzipSync((await raw(`${origin}/sitemaps/pages-2.xml.gz`)).body).toString();
      return [...(a + b).matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1] as string);
    });
    expect(listed.flat()).toEqual(urls);
    const sample = urls.filter((_, i) => i % 37 === 0);
    const statuses = await pool(sample, 16, async (u) => (await raw(u)).status);
    expect(statuses.every((x) => x === 200)).toBe(true);
  });
});
