import { describe, expect, it } from 'vitest';
import { adoptOrphanRows, extractPage, parseDocument, toMarkdown } from '../src/index.js';

const rows = Array.from(
  { length: 6 },
  (_, i) =>
    `<tr><td>option_${i}</td><td>string</td><td>Sets behaviour number ${i} of the client when it connects.</td></tr>`,
).join('');
const page = (
  head: string,
) => `<!doctype html><html><head><title>Client options</title>${head}</head><body>
<nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
<main>
<div class="prose"><p>The client reads its options from the constructor, and every option has a sensible default.</p>
<p>Options are validated once, when the client is created, so a typo fails fast instead of at the first request.</p></div>
<div class="params"><table><thead><tr><th>Name</th><th>Type</th><th>Meaning</th></tr></thead><tbody>${rows}</tbody></table></div>
</main><footer>© 2026 Client authors</footer></body></html>`;

describe('container fallback', () => {
  it('Readability alone drops the parameter table of a documentation layout', () => {
    const alone = extractPage(page(''), { strategy: 'readability' });
    expect(alone.method).toBe('readability');
    expect(alone.markdown).not.toContain('option\\_5');
  });

  it('auto switches to <main> when Readability kept less than half its text, and keeps the table', () => {
    const auto = extractPage(page(''));
    expect(auto.method).toBe('container');
    expect(auto.markdown).toContain('| Name | Type | Meaning |');
    expect(auto.markdown).toContain(
      '| option\\_5 | string | Sets behaviour number 5 of the client when it connects. |',
    );
    expect(auto.markdown).not.toContain('Home');
    expect(auto.markdown).not.toContain('Client authors');
  });

  it('a declared article built like reference material (a data table) gets the container rule', () => {
    const article = extractPage(page('<meta property="og:type" content="article">'));
    expect(article.method).toBe('container');
    expect(article.markdown).toContain('| option\\_5 | string |');
  });

  it('a more specific JSON-LD type (QAPage, TechArticle) next to Article lifts the guard', () => {
    const ld = extractPage(
      page('<script type="application/ld+json">[{"@type":"Article"},{"@type":"QAPage"}]</script>'),
    );
    expect(ld.method).toBe('container');
  });
});

describe('article guard', () => {
  const prose = (
    head: string,
  ) => `<!doctype html><html><head><title>Notes</title>${head}</head><body>
<main><article><h1>Notes</h1><p>${'The river rose slowly through the night and the town watched it. '.repeat(8)}</p>
<p>${'By morning the water had reached the square, and the bakers moved their ovens. '.repeat(8)}</p></article>
<section><h2>More from the desk</h2><p>${'A short teaser for another story in the same section of the paper. '.repeat(10)}</p>
<p>${'Another teaser about an unrelated event somewhere else in the region. '.repeat(10)}</p></section></main>
</body></html>`;

  it('trusts Readability on a declared article built like prose', () => {
    const article = extractPage(prose('<meta property="og:type" content="article">'));
    expect(article.method).toBe('readability');
  });
});

describe('orphan table rows', () => {
  it('rows left without their table become one GFM table', () => {
    const doc = parseDocument('<html><body><div id="c"></div></body></html>');
    const div = doc.querySelector('#c')!;
    for (const [k, v] of [
      ['a', '1'],
      ['b', '2'],
    ]) {
      const tr = doc.createElement('tr');
      for (const text of [k!, v!]) {
        const td = doc.createElement('td');
        td.textContent = text;
        tr.appendChild(td);
      }
      div.appendChild(tr);
    }
    adoptOrphanRows(div);
    expect(div.querySelectorAll('table')).toHaveLength(1);
    expect(toMarkdown(div)).toBe('|  |  |\n| --- | --- |\n| a | 1 |\n| b | 2 |');
  });
});

describe('converting a root in place', () => {
  const page = `<html><body><main><div id="c">
    <h2>Install   the <em>tool</em></h2>
    <p>Run   it
      once, then <a href="/x">read   more</a>.</p>
    <pre><code>  keep
    these   spaces</code></pre>
    <ul><li> one </li><li>two</li></ul>
  </div></main></body></html>`;

  it('gives the same Markdown as converting a copy, and the copy leaves the tree as it was', () => {
    const doc = parseDocument(page);
    const el = doc.querySelector('#c')!;
    const before = el.outerHTML;
    const copied = toMarkdown(el);
    expect(el.outerHTML).toBe(before);
    expect(el.parentNode).not.toBeNull();
    const consumed = toMarkdown(el, { consume: true });
    expect(consumed).toBe(copied);
    expect(consumed).toContain('    these   spaces');
    // Consumed: detached from its page, and cloning works as usual again.
    expect(el.parentNode).toBeNull();
    expect(doc.querySelector('#c')).toBeNull();
    expect(el.cloneNode(true)).not.toBe(el);
  });
});
