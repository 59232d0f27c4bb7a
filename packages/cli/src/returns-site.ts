import { createServer, type Server } from 'node:http';

/**
 * A two-page shop policy site on loopback for the canary demo and tests: the seeds' worked
 * example, a returns page whose window changes from 30 days to 14 days. `set` changes what the
 * returns page says from the next request on.
 */
export type ReturnsPolicy = '30 days' | '14 days' | 'redesign';

export interface ReturnsSite {
  readonly origin: string;
  readonly returnsUrl: string;
  readonly shippingUrl: string;
  set(policy: ReturnsPolicy): void;
  stop(): Promise<void>;
}

const PAGE_TEXT = [
  'Items must be unused and in their original packaging, with the receipt or order number.',
  'Sale items and gift cards can be returned under the same rules as any other item.',
  'Refunds go back to the original payment method within five business days of receipt.',
];

function returnsBody(policy: ReturnsPolicy): string {
  // The redesign moves the return window into a widget the page renders client-side: the
  // served HTML no longer states it, so the staged text lacks the phrase a canary expects.
  const window =
    policy === 'redesign'
      ? '<p>See the return calculator below to check your return window.</p><div id="calc"></div>'
      : `<p>You can return any item within ${policy} of delivery for a full refund.</p>`;
  return `<h2 id="return-window">Return window</h2>
${window}
<h2 id="conditions">Conditions</h2>
${PAGE_TEXT.map((t) => `<p>${t}</p>`).join('\n')}`;
}

const SHIPPING = `<h2 id="times">Delivery times</h2>
<p>Standard shipping takes three to five business days across the country.</p>
<p>Express shipping arrives the next business day when ordered before noon.</p>
<h2 id="costs">Costs</h2>
<p>Shipping is free for orders over fifty euros; below that it costs four euros.</p>`;

function html(title: string, article: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} | Example Shop</title></head>
<body><nav><a href="/">Home</a> <a href="/policies/returns">Returns</a> <a href="/shipping">Shipping</a></nav>
<main><article><h1>${title}</h1>
${article}
</article></main><footer>Example Shop customer service</footer></body></html>`;
}

export async function startReturnsSite(): Promise<ReturnsSite> {
  let policy: ReturnsPolicy = '30 days';
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const page =
      path === '/policies/returns'
        ? html('Returns policy', returnsBody(policy))
        : path === '/shipping'
          ? html('Shipping', SHIPPING)
          : undefined;
    if (page === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const origin = `http://127.0.0.1:${address.port}`;
  return {
    origin,
    returnsUrl: `${origin}/policies/returns`,
    shippingUrl: `${origin}/shipping`,
    set(next) {
      policy = next;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
