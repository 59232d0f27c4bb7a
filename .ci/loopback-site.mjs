// A three-page documentation site on 127.0.0.1 for the packed-tarball install test. Answers
// conditional requests (ETag) so a second refresh is all 304s. Prints its base URL, then serves
// until killed.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';

const para = (topic, n) =>
  Array.from(
    { length: n },
    (_, i) =>
      `<p>The ${topic} guide, paragraph ${i + 1}: ragfresh keeps this page current in the index, ` +
      `refetching it politely with conditional requests and publishing only what changed.</p>`,
  ).join('\n');
const page = (title, topic) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>` +
  `<body><main><article><h1>${title}</h1>${para(topic, 6)}<h2>Details</h2>${para(topic, 4)}` +
  `</article></main></body></html>`;

const pages = {
  '/docs/install': page('Installing the widget', 'install'),
  '/docs/pricing': page('Pricing of the team plan', 'pricing: the team plan costs 12 euros a seat'),
  '/docs/faq': page('Frequently asked questions', 'faq'),
};

const server = createServer((req, res) => {
  const base = `http://${req.headers.host}`;
  const path = new URL(req.url ?? '/', base).pathname;
  let body;
  let type = 'text/html; charset=utf-8';
  if (path === '/robots.txt') {
    body = 'User-agent: *\nAllow: /\n';
    type = 'text/plain';
  } else if (path === '/sitemap.xml') {
    body = `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${Object.keys(
      pages,
    )
      .map((p) => `<url><loc>${base}${p}</loc></url>`)
      .join('')}</urlset>`;
    type = 'application/xml';
  } else {
    body = pages[path];
  }
  if (body === undefined) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    return;
  }
  const etag = `"${createHash('sha256').update(body).digest('hex').slice(0, 16)}"`;
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, { etag }).end();
    return;
  }
  res.writeHead(200, { 'content-type': type, etag }).end(body);
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  process.stdout.write(`http://127.0.0.1:${port}\n`);
});
