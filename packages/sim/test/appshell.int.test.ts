import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SimWeb, startSimWeb } from '../src/index.js';

// Needs the Debian chromium package (.ci/run installs it); fails loudly when it is missing.
const CHROMIUM = process.env.RAGFRESH_CHROMIUM ?? '/usr/bin/chromium';

let sim: SimWeb;
let browser: Browser;
beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `no Chromium at ${CHROMIUM}; apt-get install -y chromium or set RAGFRESH_CHROMIUM`,
    );
  sim = await startSimWeb({ seed: 13, hosts: 1, pagesPerHost: 4 });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
  await sim?.stop();
});

describe('appShell in a real browser', () => {
  it('renders the article client-side, while the raw HTML holds none of it', async () => {
    const url = sim.urls()[2] as string;
    const facts = sim.pageFacts(url);
    sim.mutate(url, 'appShell');
    const raw = await (await fetch(url)).text();
    expect(raw).not.toContain(facts.phrase);
    const page = await browser.newPage();
    await page.goto(url, { waitUntil: 'load' });
    const text = (await page.locator('#root').textContent()) ?? '';
    expect(text).toContain(facts.phrase);
    for (const s of facts.sections) expect(text).toContain(s.phrase);
    expect(await page.title()).toContain(facts.title);
    await page.close();
  });

  it('stays empty when the bundle does not render', async () => {
    const url = sim.urls()[3] as string;
    sim.mutate(url, 'appShell', { clientRender: false });
    const page = await browser.newPage();
    await page.goto(url, { waitUntil: 'load' });
    expect(await page.locator('#root').innerHTML()).toBe('');
    await page.close();
  });
});
