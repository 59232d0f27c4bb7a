import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MemoryConnector } from '@ragfresh/connector-memory';
import { FIELDS, HashingEmbeddings, InMemoryStateStore, Publisher } from '@ragfresh/core';
import type { Fetcher } from '@ragfresh/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildRagPrompt,
  formatEvidence,
  RagfreshLoader,
  RagfreshRetriever,
  toPublishCandidate,
} from '../src/index.js';
import { simFetcher } from './helpers.js';

// Hostile pages on loopback: each names a canonical it has no right to, or plants a link.
const FILLER =
  'Budgets are counted per tenant and per minute. A tenant over its budget is slowed down, never refused, and the slow-down shows in the response headers so that clients can back off.';
const page = (title: string, head: string, body: string) =>
  `<!doctype html><html lang="en"><head><title>${title}</title>${head}</head><body><main><article><h1>${title}</h1><p>${body}</p><p>${FILLER}</p><p>${FILLER}</p></article></main></body></html>`;
const PAGES: Record<string, string> = {
  '/pricing': page(
    'Zephyr pricing',
    '<link rel="canonical" href="https://docs.other-company.example/official/pricing">',
    'The zephyr plan costs forty two credits per seat.',
  ),
  '/script': page(
    'Quokka limits',
    '<link rel="canonical" href="javascript:alert(2)">',
    'The quokka limit is nine requests per second; <a href="data:text/html,x">the quokka console</a>.',
  ),
};

let server: Server;
let origin: string;
let fetcher: Fetcher;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/old-pricing') return void res.writeHead(302, { location: '/pricing' }).end();
    const html = PAGES[req.url ?? ''];
    if (html === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fetcher = simFetcher();
});
afterAll(async () => {
  await fetcher.close();
  await new Promise((r) => server.close(r));
});

const loader = (canonical?: 'same-site' | 'trust' | 'ignore') =>
  new RagfreshLoader({
    fetcher,
    sourceId: 'docs',
    urls: [`${origin}/old-pricing`, `${origin}/script`],
    state: new InMemoryStateStore(),
    ...(canonical === undefined ? {} : { canonical }),
  });
const sourceLines = (text: string) => text.split('\n').filter((l) => l.startsWith('Source: '));

describe('LangChain path: citations a page cannot forge', () => {
  it('loaded Documents: formatEvidence cites the fetched URL; the off-site canonical is only a claim', async () => {
    const docs = await loader().load();
    const evidence = formatEvidence(docs);
    expect(sourceLines(evidence).map((l) => l.replace(/ \(.*$/, ''))).toEqual([
      `Source: ${origin}/pricing`,
      `Source: ${origin}/script`,
    ]);
    expect(evidence).not.toMatch(/other-company|javascript:|data:/);
    expect(evidence).toContain('the quokka console');
    const pricing = docs.find((d) => d.metadata[FIELDS.url] === `${origin}/old-pricing`)!;
    expect(pricing.metadata[FIELDS.canonicalUrl]).toBeUndefined();
    expect(pricing.metadata[FIELDS.canonicalClaim]).toBe(
      'https://docs.other-company.example/official/pricing',
    );
  });

  it("a source that opts in (canonical: 'trust') is cited by its canonical (the control)", async () => {
    const evidence = formatEvidence(await loader('trust').load());
    expect(sourceLines(evidence)[0]).toMatch(
      /^Source: https:\/\/docs\.other-company\.example\/official\/pricing /,
    );
    expect(evidence).not.toContain('javascript:');
  });

  it('published and retrieved: metadata, rf_citations and buildRagPrompt cite the fetched URL', async () => {
    const embeddings = new HashingEmbeddings();
    const connector = new MemoryConnector();
    await connector.open({ dimensions: embeddings.dimensions });
    const publisher = await Publisher.open({ connector, state: new InMemoryStateStore() });
    const candidates = [];
    for await (const p of loader().pages())
      candidates.push(await toPublishCandidate(p, embeddings));
    await publisher.publish(candidates);
    const retriever = RagfreshRetriever.fromConnector({ connector, embeddings, k: 10 });
    const docs = await retriever.invoke('zephyr plan credits quokka limit');
    expect(docs.length).toBeGreaterThanOrEqual(2);
    const citations = docs.flatMap(
      (d) => (d.metadata.rf_citations as { url: string }[] | undefined)?.map((c) => c.url) ?? [],
    );
    expect(new Set(citations)).toEqual(new Set([`${origin}/pricing`, `${origin}/script`]));
    for (const d of docs) expect(d.metadata[FIELDS.canonicalUrl]).toBeUndefined();
    const prompt = buildRagPrompt({ instructions: 'Answer.', question: 'price?', docs })
      .map((m) => String(m.content))
      .join('\n');
    expect(sourceLines(prompt).every((l) => l.startsWith(`Source: ${origin}/`))).toBe(true);
    expect(sourceLines(prompt).length).toBe(docs.length);
    expect(prompt).not.toMatch(/other-company|javascript:/);
    await publisher.close();
  });

  it('an unknown canonical policy is refused with one line', () => {
    expect(
      () =>
        new RagfreshLoader({
          fetcher,
          sourceId: 'docs',
          urls: [`${origin}/pricing`],
          canonical: 'always' as 'trust',
        }),
    ).toThrow(/canonical must be one of same-site, trust, ignore, got "always"/);
  });
});
