// The freshness bench's simulated web, in its own process so its CPU is never counted against
// a pipeline. The parent drives it over IPC ({ id, method, args } -> { id, result | error }):
// the sim's own methods, plus `setListing(host, urls | null)`, which makes the bench sitemap of
// a host (`<listing origin>/<host>.xml`) list only those URLs (null: every page of the host).
import { createServer } from 'node:http';
import { startSimWeb } from '@ragfresh/sim';

const input = JSON.parse(process.argv[2] ?? '{}') as { seed: number; hosts: number; pages: number };
const sim = await startSimWeb({
  seed: input.seed,
  hosts: input.hosts,
  pagesPerHost: input.pages,
  markdownTwins: false,
});
const listings = new Map<string, readonly string[]>();
const listing = createServer((req, res) => {
  const host = (req.url ?? '').replace(/^\//, '').replace(/\.xml$/, '');
  if (!sim.hosts().includes(host)) {
    res.writeHead(404).end();
    return;
  }
  const urls = listings.get(host) ?? sim.urls(host);
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls.map((u) => `<url><loc>${u}</loc></url>`).join('\n')}\n</urlset>\n`;
  res.writeHead(200, { 'content-type': 'application/xml' }).end(body);
});
await new Promise<void>((resolve) => listing.listen(0, '127.0.0.1', resolve));
const address = listing.address();
if (address === null || typeof address === 'string') throw new Error('no listing port');
const listingOrigin = `http://127.0.0.1:${address.port}`;

type Call = { id: number; method: string; args: unknown[] };
const methods: Record<string, (...args: never[]) => unknown> = {
  hosts: () => sim.hosts(),
  urls: (host?: string) => sim.urls(host),
  origin: (host: string) => sim.origin(host),
  pageFacts: (url: string) => sim.pageFacts(url),
  mutate: (url: string, kind: never, opts?: never) => sim.mutate(url, kind, opts),
  listingOrigin: () => listingOrigin,
  setListing: (host: string, urls: readonly string[] | null) => {
    if (urls === null) listings.delete(host);
    else listings.set(host, urls);
  },
  cpuMs: () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  },
  stop: async () => {
    await sim.stop();
    listing.closeAllConnections();
    listing.close();
    setImmediate(() => process.exit(0));
  },
};
process.on('message', async (msg: Call) => {
  try {
    const fn = methods[msg.method];
    if (fn === undefined) throw new Error(`unknown sim method ${msg.method}`);
    const result = await (fn as (...a: unknown[]) => unknown)(...msg.args);
    process.send?.({ id: msg.id, result });
  } catch (err) {
    process.send?.({ id: msg.id, error: (err as Error).message });
  }
});
process.send?.({ id: 0, result: 'ready' });
