import { describe, expect, it } from 'vitest';
import { parseDocument } from '../src/dom.js';
import { markCaptions, removeCaptions, removeDatelines } from '../src/furniture.js';
import { extractPage } from '../src/index.js';
import { restoreDroppedProse } from '../src/restore.js';

const WORDS =
  'river gauge water level county office warning bridge channel reading alert station sensor flow rain upstream valley dam report season record'.split(
    ' ',
  );
/** A paragraph whose word order is its own (topic and index pick the words), so no two share trigrams. */
const para = (topic: string, i: number) => {
  let x = [...topic].reduce((a, c) => (a * 31 + c.charCodeAt(0)) % 2147483647, i + 7);
  const words = Array.from({ length: 24 }, () => {
    x = (x * 48271) % 2147483647;
    return WORDS[x % WORDS.length];
  });
  return `<p>${topic} paragraph ${i}: ${words.join(' ')}.</p>`;
};
const paras = (topic: string, n: number) =>
  Array.from({ length: n }, (_, i) => para(topic, i)).join('\n');

const page = (head: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Flood warnings</title>${head}</head><body>
<header><nav><a href="/">Home</a> <a href="/news">News</a></nav></header>
${body}
<footer><p>© 2026 County News.</p></footer></body></html>`;

describe('D: captions in running prose', () => {
  it('drops a figcaption and a caption-class credit from an article', () => {
    const html = page(
      '<meta property="og:type" content="article">',
      `<article><h1>Flood warnings</h1>${paras('Intro', 3)}
<figure><img src="/gauge.jpg" alt=""><figcaption>The gauge under the old bridge. Photo: County office</figcaption></figure>
${paras('Middle', 3)}
<div class="photo"><img src="/river.jpg" alt=""><span class="image-credit">Credit: River Trust</span></div>
${paras('End', 2)}</article>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Middle paragraph 2');
    expect(md).not.toContain('The gauge under the old bridge');
    expect(md).not.toContain('Credit: River Trust');
  });

  it('keeps captions that are most of the root (a gallery: they name the items)', () => {
    const doc = parseDocument(
      `<body><main><h1>Bridges</h1>${Array.from(
        { length: 6 },
        (_, i) =>
          `<figure><img src="/b${i}.jpg" alt=""><figcaption>Bridge number ${i} over the north channel</figcaption></figure>`,
      ).join('')}<p>Six bridges.</p></main></body>`,
    );
    const main = doc.querySelector('main')!;
    expect(removeCaptions(main)).toBe(0);
    expect(main.textContent).toContain('Bridge number 5');
  });

  it('keeps the caption of a code listing or a table (it titles it), drops a photo caption', () => {
    const doc = parseDocument(
      `<body><main><h1>Gauges</h1>${paras('Intro', 4)}
<figure><pre><code>let level = gauge.read();</code></pre><figcaption>Listing 3: reading one gauge</figcaption></figure>
<figure><table><tr><th>Station</th><th>Level</th></tr><tr><td>North</td><td>2.1</td></tr></table><figcaption>Table 1: levels at noon</figcaption></figure>
<figure><img src="/dam.jpg" alt=""><figcaption>The dam in spring</figcaption></figure></main></body>`,
    );
    const main = doc.querySelector('main')!;
    expect(removeCaptions(main)).toBe(1);
    expect(main.textContent).toContain('Listing 3: reading one gauge');
    expect(main.textContent).toContain('Table 1: levels at noon');
    expect(main.textContent).not.toContain('The dam in spring');
  });

  it('marks a caption class only on an element without the image inside', () => {
    const doc = parseDocument(
      '<body><div class="wp-caption"><img src="/a.jpg" alt=""><p class="wp-caption-text">A caption</p></div></body>',
    );
    expect(markCaptions(doc)).toBe(1);
    expect(doc.querySelector('[data-rf-caption]')?.textContent).toBe('A caption');
  });
});

describe('D: publication stamps', () => {
  it('drops "Published"/"Updated" date lines of an article', () => {
    const doc = parseDocument(
      `<body><article><h1>Flood warnings</h1><div class="meta"><span>Published 10:48, Tue, Nov 19, 2019</span> <span>| Updated: 11:05, Tue, Nov 19, 2019</span></div>${paras('Body', 2)}<p>Updated 5:27 am CST, Wednesday, November 20, 2019</p></article></body>`,
    );
    const root = doc.querySelector('article')!;
    expect(removeDatelines(root)).toBe(2);
    expect(root.textContent).not.toContain('Nov 19, 2019');
    expect(root.textContent).not.toContain('November 20');
    expect(root.textContent).toContain('Body paragraph 1');
  });

  it('keeps a bare number that only looks like a dotted time', () => {
    const doc = parseDocument(
      '<body><main><p>Rated <span>4.50</span> by readers.</p><div>Posted 3 days ago</div></main></body>',
    );
    const root = doc.querySelector('main')!;
    expect(removeDatelines(root)).toBe(1);
    expect(root.textContent).toContain('4.50');
    expect(root.textContent).not.toContain('3 days ago');
  });

  it('keeps a sentence that mentions a date, and every date of a dated list', () => {
    const doc = parseDocument(
      `<body><main><p>The warning was lifted on Nov 19, 2019.</p><ul>${Array.from(
        { length: 4 },
        (_, i) => `<li><span>Nov ${i + 1}, 2019</span> <a href="/r${i}">Report ${i}</a></li>`,
      ).join('')}</ul></main></body>`,
    );
    const root = doc.querySelector('main')!;
    expect(removeDatelines(root)).toBe(0);
    expect(root.textContent).toContain('lifted on Nov 19, 2019');
    expect(root.textContent).toContain('Nov 4, 2019');
  });
});

describe('prose Readability left out of the container', () => {
  const cards =
    '<div class="cards"><div><a href="/a">Related story one</a><span>3 min read</span></div><div><a href="/b">Related story two</a><span>Nov 2, 2025</span></div></div>';
  const container = () =>
    parseDocument(
      `<body><main><h1>Gauges</h1>${paras('Intro', 2)}<h2>Reading a gauge</h2>${paras('Reading', 4)}${cards}<h2>Sources</h2>${paras('Sources', 2)}<h2>Alerts</h2>${paras('Alerts', 2)}<pre><code>curl https://example.org/gauges/12/level</code></pre><h2>Limits</h2>${paras('Limits', 2)}${paras('Author', 1)}</main></body>`,
    ).querySelector('main')!;
  const readabilityChoice = () =>
    parseDocument(
      `<body><div><h2>Reading a gauge</h2>${paras('Reading', 4)}<h2>Sources</h2>${paras('Sources', 2)}<h2>Limits</h2>${paras('Limits', 2)}</div></body>`,
    ).querySelector('div')!;

  it('brings back the intro and a section inside the choice, not the link cards or what follows it', () => {
    const restored = restoreDroppedProse(readabilityChoice(), container());
    expect(restored).toBeDefined();
    const text = restored!.textContent ?? '';
    expect(text).toContain('Intro paragraph 0');
    expect(text).toContain('Alerts paragraph 1');
    expect(text).toContain('curl https://example.org/gauges/12/level');
    expect(text).toContain('Reading paragraph 3');
    expect(text).not.toContain('Related story one');
    expect(text).not.toContain('3 min read');
    expect(text).toContain('Sources paragraph 1');
    expect(text).not.toContain('Author paragraph 0');
  });

  it('changes nothing when Readability kept all the prose', () => {
    const kept = container();
    expect(restoreDroppedProse(kept, container())).toBeUndefined();
  });

  it('changes nothing when the container does not hold Readability’s choice', () => {
    const other = parseDocument(`<body><div>${paras('Elsewhere', 3)}</div></body>`).querySelector(
      'div',
    )!;
    expect(restoreDroppedProse(other, container())).toBeUndefined();
  });
});

describe('note and warning boxes Readability left out of the container', () => {
  // Each box has a link over a fifth of its text: Readability's conditional cleaning drops it.
  const boxes = `<div class="box"><strong>Warning</strong> Never open the gates at <a href="/flood-stage">flood stage</a>.</div>
<div class="admonition"><p class="title">Note</p><p>Readings lag by an hour; see <a href="/lag">reading lag</a> and <a href="/sensors">sensors</a>.</p></div>
<p>Tip: the <a href="/north">north gauge</a> is read first each morning by the office.</p>`;
  const container = (extra: string) =>
    parseDocument(
      `<body><main><h1>Gauges</h1>${paras('Intro', 2)}<h2>Reading a gauge</h2>${paras('Reading', 2)}${extra}${paras('More', 2)}<h2>Limits</h2>${paras('Limits', 2)}</main></body>`,
    ).querySelector('main')!;
  const readabilityChoice = () =>
    parseDocument(
      `<body><div>${paras('Intro', 2)}<h2>Reading a gauge</h2>${paras('Reading', 2)}${paras('More', 2)}<h2>Limits</h2>${paras('Limits', 2)}</div></body>`,
    ).querySelector('div')!;

  it('brings back boxes opened by a label (Note, Tip:, Warning) inside the choice', () => {
    const restored = restoreDroppedProse(readabilityChoice(), container(boxes));
    expect(restored).toBeDefined();
    const text = restored!.textContent ?? '';
    expect(text).toContain('Never open the gates at flood stage');
    expect(text).toContain('Readings lag by an hour');
    expect(text).toContain('is read first each morning');
    expect(text).toContain('Limits paragraph 1');
  });

  it('leaves out the same linky text without a label, and a section headed "Notes"', () => {
    const unlabelled = `<div class="box"><strong>Gates</strong> Never open the gates at <a href="/flood-stage">flood stage</a>, <a href="/a">any</a> time.</div>
<div class="admonition"><p>Readings lag by an hour; see <a href="/lag">reading lag</a> and <a href="/sensors">sensors</a>.</p></div>
<div><h3>Notes</h3><p>See <a href="/lag">reading lag</a> and <a href="/sensors">sensors</a> and <a href="/x">more</a>.</p></div>`;
    expect(restoreDroppedProse(readabilityChoice(), container(unlabelled))).toBeUndefined();
  });
});
