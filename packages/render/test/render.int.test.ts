import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extractPage } from '@ragfresh/extract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Renderer, render } from '../src/index.js';

const SHELL = `<!doctype html><html><head><title>Widget docs</title>
<script defer src="/bundle.js"></script></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div></body></html>`;
const BUNDLE = `setTimeout(() => {
  fetch('/data.json').then((r) => r.json()).then((d) => {
    const root = document.getElementById('root');
    root.innerHTML = '<main><h1>' + d.title + '</h1><p>' + d.body + '</p></main>';
  });
}, 50);`;
const DATA = {
  title: 'Rendered heading',
  body: 'This paragraph was inserted by JavaScript after a fetch, so only a browser sees it. It is long enough to count as the document body for the extractor and the detector alike.',
};
const STATIC = `<!doctype html><html><head><title>Static</title></head><body><main><h1>Static page</h1>
<p>Server-rendered text that needs no browser at all; the raw HTML already holds the whole document, so auto mode keeps it raw and never starts Chromium for it.</p></main></body></html>`;

let server: Server;
let base: string;
let renderer: Renderer;

beforeAll(async () => {
  server = createServer((req, res) => {
    const send = (type: string, body: string) => {
      res.writeHead(200, { 'content-type': type });
      res.end(body);
    };
    if (req.url === '/app') send('text/html; charset=utf-8', SHELL);
    else if (req.url === '/bundle.js') send('text/javascript', BUNDLE);
    else if (req.url === '/data.json') send('application/json', JSON.stringify(DATA));
    else if (req.url === '/static') send('text/html; charset=utf-8', STATIC);
    else {
      res.writeHead(404);
      res.end();
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  renderer = await Renderer.launch();
});

afterAll(async () => {
  await renderer?.close();
  server?.close();
});

describe('render', () => {
  it('returns the DOM after JavaScript inserted the text (network idle)', async () => {
    const result = await render(`${base}/app`, { timeoutMs: 20_000 });
    expect(result.status).toBe(200);
    expect(result.finalUrl).toBe(`${base}/app`);
    expect(result.html).toContain('<h1>Rendered heading</h1>');
    expect(extractPage(result.html).markdown).toContain('inserted by JavaScript after a fetch');
  });
});

// The raw/rendered/auto decision lives in @ragfresh/engine (`acquirePage`), tested there.
