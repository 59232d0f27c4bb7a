import { afterEach, describe, expect, it } from 'vitest';
import { type SimWeb, startSimWeb } from '../src/index.js';
import { raw } from './raw.js';

let sims: SimWeb[] = [];
afterEach(async () => {
  await Promise.all(sims.map((s) => s.stop()));
  sims = [];
});

async function start(opts: Parameters<typeof startSimWeb>[0]): Promise<SimWeb> {
  const sim = await startSimWeb(opts);
  sims.push(sim);
  return sim;
}

/** Every body the sim serves for a host, keyed by path. */
async function snapshot(sim: SimWeb): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const host of sim.hosts()) {
    const origin = sim.origin(host);
    const paths = [
      ...sim.urls(host).flatMap((u) => [u, sim.markdownUrl(u)]),
      `${origin}/robots.txt`,
      `${origin}/sitemap.xml`,
      `${origin}/sitemaps/pages-1.xml`,
      `${origin}/sitemaps/pages-2.xml.gz`,
      `${origin}/llms.txt`,
    ];
    for (const url of paths) {
      const res = await raw(url);
      expect(res.status, url).toBe(200);
      out.set(url.slice(origin.length) + ` @${host}`, res.body.toString('latin1'));
    }
  }
  return out;
}

async function startOnFreeBasePort(
  seed: number,
  hosts: number,
  pagesPerHost: number,
): Promise<SimWeb> {
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    try {
      return await start({ seed, hosts, pagesPerHost, port });
    } catch (err) {
      if (attempt > 20) throw err;
    }
  }
}

describe('determinism', () => {
  it('serves byte-identical bodies (pages, twins, robots, sitemaps, llms.txt) for the same seed and port', async () => {
    const a = await startOnFreeBasePort(42, 2, 8);
    const port = a.hostInfo('docs-0').port;
    const first = await snapshot(a);
    await a.stop();
    sims = [];
    const b = await start({ seed: 42, hosts: 2, pagesPerHost: 8, port });
    const second = await snapshot(b);
    expect(second.size).toBe(first.size);
    expect(first.size).toBe(2 * (8 * 2 + 5));
    for (const [key, body] of first) expect(second.get(key), key).toBe(body);
  });

  it('page bodies differ only in absolute URLs when ports differ', async () => {
    const a = await start({ seed: 5, hosts: 1, pagesPerHost: 6 });
    const b = await start({ seed: 5, hosts: 1, pagesPerHost: 6 });
    const ua = a.urls();
    const ub = b.urls();
    expect(ua.map((u) => new URL(u).pathname)).toEqual(ub.map((u) => new URL(u).pathname));
    for (let i = 0; i < ua.length; i++) {
      const ta = (await raw(ua[i] as string)).body
        .toString('utf8')
        .replaceAll(a.origin('docs-0'), 'ORIGIN');
      const tb = (await raw(ub[i] as string)).body
        .toString('utf8')
        .replaceAll(b.origin('docs-0'), 'ORIGIN');
      expect(ta).toBe(tb);
      expect(ta.match(/ORIGIN/g)).toHaveLength(1); // only the canonical link is absolute
    }
  });

  it('replays the same mutations to the same bytes', async () => {
    const a = await start({ seed: 8, hosts: 1, pagesPerHost: 6 });
    const b = await start({ seed: 8, hosts: 1, pagesPerHost: 6 });
    const script = (sim: SimWeb) => {
      const [, p1, p2, p3] = sim.urls();
      sim.mutate(p1 as string, 'edit', { section: 1, text: 'Changed.' });
      sim.mutate(p1 as string, 'edit');
      sim.mutate(p2 as string, 'shrink', { keepSections: 1 });
      sim.mutate(p3 as string, 'timestampChurn');
      sim.advance(2);
    };
    script(a);
    script(b);
    for (let i = 0; i < 6; i++) {
      const ua = a.urls()[i] as string;
      const ub = b.urls()[i] as string;
      for (let round = 0; round < 2; round++) {
        const ta = (await raw(ua)).body.toString().replaceAll(a.origin('docs-0'), 'O');
        const tb = (await raw(ub)).body.toString().replaceAll(b.origin('docs-0'), 'O');
        expect(ta).toBe(tb);
      }
      expect(a.pageFacts(ua)).toEqual({
        ...b.pageFacts(ub),
        url: ua,
        markdownUrl: a.markdownUrl(ua),
      });
    }
  });

  it('different seeds give different sites', async () => {
    const a = await start({ seed: 1, hosts: 1, pagesPerHost: 5 });
    const b = await start({ seed: 2, hosts: 1, pagesPerHost: 5 });
    const fa = a.urls().map((u) => a.pageFacts(u).phrase);
    const fb = b.urls().map((u) => b.pageFacts(u).phrase);
    expect(fa.filter((p) => fb.includes(p))).toEqual([]);
  });

  it('gives every page and section a phrase found in that page only', async () => {
    const sim = await start({ seed: 9, hosts: 2, pagesPerHost: 15 });
    const bodies = new Map<string, string>();
    for (const url of sim.urls()) bodies.set(url, (await raw(url)).body.toString('utf8'));
    const phrases: string[] = [];
    for (const url of sim.urls()) {
      const facts = sim.pageFacts(url);
      expect(facts.sections.length).toBeGreaterThanOrEqual(2);
      for (const phrase of [facts.phrase, ...facts.sections.map((s) => s.phrase)]) {
        phrases.push(phrase);
        const holders = [...bodies].filter(([, body]) => body.includes(phrase)).map(([u]) => u);
        expect(holders, phrase).toEqual([url]);
      }
      const body = bodies.get(url) as string;
      for (const s of facts.sections) expect(body).toContain(`id="${s.anchor}"`);
    }
    expect(new Set(phrases).size).toBe(phrases.length);
  });
});
