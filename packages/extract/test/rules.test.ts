import { describe, expect, it } from 'vitest';
import {
  cleanDocument,
  detectNotDocument,
  extractPage,
  learnTitleAffixes,
  parseDocument,
  parsePage,
  stripTitleAffixes,
  textOf,
  titleRoot,
} from '../src/index.js';

const prose = (topic: string, n = 6) =>
  Array.from(
    { length: n },
    (_, i) =>
      `<p>${topic} paragraph ${i}: the service keeps a copy of every record, checks it on each read and repairs it from a replica when the checksum does not match.</p>`,
  ).join('\n');

const shell = (head: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Storage guide</title>${head}</head><body>
<header><nav><a href="/">Home</a> <a href="/docs">Docs</a> <a href="/blog">Blog</a></nav></header>
${body}
<footer><p>© 2026 Example Storage. All rights reserved.</p></footer></body></html>`;

describe('A: Readability class rules do not delete real content', () => {
  it('keeps a code block whose <code> carries a name with "extra" in it', () => {
    const html = shell(
      '<meta property="og:type" content="article">',
      `<article><h1>Storage guide</h1>${prose('Intro', 4)}
<div class="highlight"><pre><code class="nextra-code language-js">const store = open('data');
store.put('k', 1);</code></pre></div>${prose('Outro', 3)}</article>`,
    );
    const page = extractPage(html);
    expect(page.markdown).toContain("```js\nconst store = open('data');\nstore.put('k', 1);\n```");
  });

  it('keeps headings with utility classes like scroll-mt-* that read as "scroll"', () => {
    const html = shell(
      '',
      `<article><h1>Storage guide</h1>${prose('Intro', 3)}
<h2 class="group scroll-mt-20 heading-scroll-margin-top">Replication</h2>${prose('Replication', 3)}
<h2 class="scroll-mt-20">Repair</h2>${prose('Repair', 3)}</article>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('## Replication');
    expect(md).toContain('## Repair');
  });

  it('keeps a table inside an overflow-hidden wrapper', () => {
    const rows = Array.from(
      { length: 5 },
      (_, i) => `<tr><td>opt${i}</td><td>Sets option ${i} of the store.</td></tr>`,
    ).join('');
    const html = shell(
      '',
      `<article><h1>Storage guide</h1>${prose('Intro', 4)}
<div class="overflow-hidden rounded-lg"><table><thead><tr><th>Name</th><th>Meaning</th></tr></thead><tbody>${rows}</tbody></table></div></article>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('| Name | Meaning |');
    expect(md).toContain('| opt4 | Sets option 4 of the store. |');
  });

  it('keeps a collapsed "read more" panel that a toggle controls', () => {
    const html = shell(
      '',
      `<article><h1>Storage guide</h1>${prose('Intro', 4)}
<button aria-expanded="false" aria-controls="more-1">Read more</button>
<div id="more-1" class="details-panel--hidden hidden-text" hidden><p>The collapsed panel explains how replicas are chosen: the nearest healthy node in another zone, never two in one rack.</p></div></article>`,
    );
    expect(extractPage(html).markdown).toContain('never two in one rack');
  });
});

describe('B: link-made main content', () => {
  it('keeps a grid of link cards under the main heading, and not the site nav', () => {
    const cards = [
      'Install the server',
      'Configure replication',
      'Back up and restore',
      'Monitor the cluster',
      'Upgrade between versions',
      'Tune for large objects',
    ]
      .map(
        (t, i) =>
          `<div class="card"><a href="/docs/${i}"><h3>${t}</h3></a><p>${t} in a few steps.</p></div>`,
      )
      .join('');
    const html = shell('', `<main><h1>Documentation</h1><div class="grid">${cards}</div></main>`);
    const md = extractPage(html, { url: 'https://storage.example/docs' }).markdown;
    expect(md).toContain('Configure replication');
    expect(md).toContain('Tune for large objects in a few steps.');
    expect(md).not.toContain('Blog');
  });
});

describe('D: too much kept', () => {
  it('drops a CSS-hidden block from the container', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 5)}
<div class="related" style="display: none"><h2>Related posts</h2>${prose('Hidden related', 8)}</div></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Body paragraph 4');
    expect(md).not.toContain('Hidden related');
  });

  it('runs Readability output through the same nav stripping as the container', () => {
    const html = shell(
      '<meta property="og:type" content="article">',
      `<article><h1>Storage guide</h1>${prose('Body', 6)}
<nav class="chapter-links"><a href="/a">Previous chapter: the journal</a> <a href="/b">Next chapter: compaction</a></nav></article>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Body paragraph 5');
    expect(md).not.toContain('Next chapter');
  });

  it('drops a "Was this page helpful?" widget', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 5)}
<div class="rate"><p>Was this page helpful?</p><button>Yes</button><button>No</button></div></main>`,
    );
    expect(extractPage(html).markdown).not.toMatch(/helpful/i);
  });

  it('drops per-post action links of a Q&A thread', () => {
    const html = shell(
      '',
      `<main><h1>How do I repair a replica?</h1><div class="post">${prose('Question', 3)}
<div class="menu"><a href="/q/1/share">Share</a> <a href="/q/1/edit">Improve this question</a> <a href="/q/1/follow">Follow</a></div></div>
<div class="post">${prose('Answer', 3)}<div><a href="/a/2/share">Share</a> <a href="/a/2/edit">Improve this answer</a></div></div></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Answer paragraph 2');
    expect(md).not.toMatch(/Improve this|Share|Follow/);
  });
});

describe('E: content the raw HTML hides on purpose', () => {
  it('puts React streaming SSR segments in place of their placeholders', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1><template id="B:0"></template><p>Loading…</p></main>
<div hidden id="S:0"><article><h2>Streamed section</h2>${prose('Streamed', 6)}</article></div>
<script>$RC("B:0","S:0")</script>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('## Streamed section');
    expect(md).toContain('Streamed paragraph 5');
  });

  it('shows a hidden block that holds most of the page text', () => {
    const html = shell(
      '',
      `<div hidden><main><h1>Storage guide</h1>${prose('Body', 6)}</main></div>`,
    );
    expect(extractPage(html).markdown).toContain('Body paragraph 5');
  });
});

describe('F: error pages served with 200', () => {
  it('flags a page titled "Error | …" with only a legal footer', () => {
    const html = `<!doctype html><html><head><title>Error | Example Corp</title></head><body>
<header><a href="/">Example Corp</a></header><main><p>Go back to the <a href="/">home page</a>.</p></main>
<footer><p>© 2026 Example Corp. Terms. Privacy. Imprint.</p></footer></body></html>`;
    const check = detectNotDocument(html, { status: 200 });
    expect(check.ok).toBe(false);
    expect(check.reasons.map((r) => r.code)).toContain('ERROR_PAGE');
  });

  it('does not flag a documentation page about error handling', () => {
    const html = shell('', `<main><h1>Error handling</h1>${prose('Errors', 8)}</main>`).replace(
      '<title>Storage guide</title>',
      '<title>Error handling | Storage docs</title>',
    );
    expect(detectNotDocument(html, { status: 200 }).ok).toBe(true);
  });
});

describe('G: headings', () => {
  it('keeps an in-body h1 as level 1 (Readability renames it h2)', () => {
    const html = shell(
      '<meta property="og:type" content="article">',
      `<article><h1>Storage guide</h1>${prose('Intro', 3)}<h1>Part two</h1>${prose('Second', 3)}<h2>Details</h2>${prose('Details', 3)}</article>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toMatch(/^# Part two$/m);
    expect(md).toMatch(/^## Details$/m);
  });

  it('recognises a heading wrapped in a link (mdBook style)', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Intro', 3)}<a class="header" href="#replicas"><h2 id="replicas">Replicas</h2></a>${prose('Replicas', 3)}</main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toMatch(/^## Replicas$/m);
    expect(md).not.toContain('[## ');
  });

  it('roots heading paths at the title without the site name', () => {
    expect(titleRoot('Install | Storage | Example Corp', { siteName: 'Example Corp' })).toBe(
      'Install | Storage',
    );
    expect(titleRoot('Install the server - Example Docs', { h1: 'Install the server' })).toBe(
      'Install the server',
    );
    const html = shell(
      '<meta property="og:site_name" content="Example Storage">',
      `<main><h1>Storage guide</h1>${prose('Body', 3)}</main>`,
    ).replace('<title>Storage guide</title>', '<title>Storage guide | Example Storage</title>');
    expect(extractPage(html).rootTitle).toBe('Storage guide');
  });

  it('learns the suffix a host puts on its titles', () => {
    const affixes = learnTitleAffixes([
      'Install | Guides | Example Corp',
      'Configure | Guides | Example Corp',
      'Pricing | Example Corp',
      'Blog post about storage – Example Corp',
    ]);
    expect(affixes.suffixes).toContain(' | Example Corp');
    expect(stripTitleAffixes('Upgrade | Example Corp', affixes)).toBe('Upgrade');
    expect(stripTitleAffixes('Example Corp', affixes)).toBe('Example Corp');
  });
});

describe('parsePage: one parse, classification first', () => {
  it('classify() then extract() gives what detectNotDocument and extractPage give', () => {
    const html = shell('', `<main><h1>Storage guide</h1>${prose('Body', 4)}</main>`);
    const parsed = parsePage(html, { url: 'https://storage.example/guide' });
    const check = parsed.classify({ status: 200 });
    const page = parsed.extract();
    expect(check).toEqual(detectNotDocument(html, { status: 200 }));
    expect(page).toEqual(extractPage(html, { url: 'https://storage.example/guide' }));
    // Classification after extraction re-parses rather than reading a rewritten tree.
    expect(parsed.classify({ status: 200 })).toEqual(check);
  });
});

describe('E: a document served in <noscript>', () => {
  it('keeps a thread that forum software serves to readers without JavaScript', () => {
    const html = shell(
      '',
      `<div id="app"></div><noscript><main><h1>How do I repair a replica?</h1>${prose('Reply', 5)}</main></noscript>
<noscript><img src="/pixel.gif" alt=""></noscript>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Reply paragraph 4');
  });
});

describe('G: headings inside links to other pages (cards)', () => {
  const cards = Array.from(
    { length: 5 },
    (_, i) =>
      `<a href="/guides/${i}"><h3>Guide number ${i}</h3><p>What guide ${i} covers, in one sentence.</p></a>`,
  ).join('');
  it('off an article, a card link is unwrapped and its title is a heading', () => {
    const md = extractPage(
      shell('', `<main><h1>Guides</h1>${prose('Intro', 2)}${cards}</main>`),
    ).markdown;
    expect(md).toMatch(/^### Guide number 4$/m);
  });
  it('on a declared article, a card link stays a link (a related story)', () => {
    const html = shell(
      '<meta property="og:type" content="article">',
      `<article><h1>Storage guide</h1>${prose('Body', 6)}${cards}</article>`,
    );
    expect(extractPage(html).markdown).not.toMatch(/^### Guide number 4$/m);
  });
});

describe('D: related, recommended and newsletter blocks', () => {
  const related = (n: number) =>
    Array.from(
      { length: n },
      (_, i) => `<li><a href="/posts/${i}">Another story about storage number ${i}</a></li>`,
    ).join('');

  it('drops a "You may also like" list of links that its heading opens, in the container', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 5)}
<section class="more"><h2>You may also like</h2><ul>${related(6)}</ul></section></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Body paragraph 4');
    expect(md).not.toContain('You may also like');
    expect(md).not.toContain('Another story about storage');
  });

  it('drops a newsletter sign-up block among siblings, up to the next heading', () => {
    const html = shell(
      '<meta property="og:type" content="article">',
      `<article><h1>Storage guide</h1>${prose('Body', 6)}
<h3>Sign up for our newsletter</h3><p>Weekly tips, no spam.</p><form><input type="email"><button>Go</button></form>
<h2>Repair</h2>${prose('Repair', 3)}</article>`,
    );
    const md = extractPage(html).markdown;
    expect(md).not.toMatch(/newsletter|Weekly tips/);
    expect(md).toContain('## Repair');
    expect(md).toContain('Repair paragraph 2');
  });

  it('keeps a section whose heading only sounds related when it is prose', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 4)}<section><h2>Related work</h2>${prose('Prior systems', 4)}</section>
<section><h2>Popular</h2>${prose('Popularity explained', 4)}</section></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('## Related work');
    expect(md).toContain('Prior systems paragraph 3');
    expect(md).toContain('Popularity explained paragraph 3');
  });

  it('keeps a page whose own title is the list (h1 is never a promo heading)', () => {
    const html = shell(
      '',
      `<main><h1>Related products</h1><p>Everything that works with the store.</p><ul>${related(8)}</ul></main>`,
    );
    expect(extractPage(html).markdown).toContain('Another story about storage number 7');
  });
});

describe('D: chrome removed before Readability and the container search', () => {
  it('off articles, a long link sidebar outside nav markup does not pull the container choice', () => {
    const side = Array.from(
      { length: 40 },
      (_, i) => `<li><a href="/docs/${i}">Chapter ${i} of the storage manual</a></li>`,
    ).join('');
    const html = shell(
      '',
      `<div class="layout"><nav class="side"><ul>${side}</ul></nav><main><h1>Storage guide</h1>${prose('Body', 4)}</main></div>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Body paragraph 3');
    expect(md).not.toContain('Chapter 12 of the storage manual');
  });

  it('keeps a page that bad markup wraps whole in a <nav> (it holds the h1)', () => {
    const html = shell('', `<nav><div><h1>Storage guide</h1>${prose('Body', 5)}</div></nav>`);
    expect(extractPage(html).markdown).toContain('Body paragraph 4');
  });
});

describe('A: code blocks keep their code, not their line numbers', () => {
  const block = (lines: string[], number: (i: number) => string) =>
    `<pre><div>${lines
      .map((l, i) => `<div><span>${number(i)}</span><div><span>${l}</span></div></div>`)
      .join('')}</div></pre>`;

  it('drops classless line numbers that count up one per line', () => {
    const code = [
      'export STORE_URL=https://store.example',
      'export STORE_TOKEN=secret',
      '',
      'store sync',
    ];
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 4)}${block(code, (i) => String(i + 1))}</main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('export STORE_URL=https://store.example\nexport STORE_TOKEN=secret');
    expect(md).not.toMatch(/\d+export|\n[1-4]\s*\n/);
    expect(md).toContain('store sync');
  });

  it('keeps numbers that are code: a first column that does not count up by one', () => {
    const rows = ['alpha,1', 'beta,2', 'gamma,3'];
    const ids = ['10', '20', '30'];
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 4)}${block(rows, (i) => ids[i]!)}</main>`,
    );
    const md = extractPage(html).markdown;
    for (const [i, r] of rows.entries()) expect(md).toContain(`${ids[i]}${r}`);
  });
});

describe('D: navigation bars found by their link types', () => {
  // A generated manual's bar: a layout table with keyboard shortcuts, above and below the text.
  const bar = (
    here: string,
  ) => `<div class="nh"><table width="100%"><tr><th colspan="3">${here}</th></tr>
<tr><td><a accesskey="p" href="s1.html">Prev</a></td><td><a accesskey="u" href="part.html">Up</a></td><td><a accesskey="n" href="s3.html">Next</a></td></tr>
<tr><td>1.1. Opening a store</td><td><a accesskey="h" href="index.html">Home</a></td><td>1.3. Closing a store</td></tr></table><hr></div>`;

  it('drops Prev / Up / Next bars marked by accesskey, and a rel=prev/next pager', () => {
    const html = shell(
      '',
      `<div id="main-text">${bar('Chapter 1. Stores')}<h2>1.2. Writing to a store</h2>${prose('Body', 4)}
<ul class="pages"><li><a rel="prev" href="?p=1">‹ Newer</a></li><li>Page 2 of 9</li><li><a rel="next" href="?p=3">Older ›</a></li></ul>
${bar('Chapter 1. Stores')}</div>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Body paragraph 3');
    expect(md).not.toMatch(/Prev|Home|Opening a store|Page 2 of 9|Older/);
  });

  it('keeps one "next" link in a sentence and a block whose text is more than a bar', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 4)}
<p>Read on in <a rel="next" href="/docs/replication">the replication chapter</a>, which covers copies.</p>
<div><p>${'Each replica applies the log in order and reports its position to the primary. '.repeat(5)}</p>
<p>This chapter follows <a rel="prev" href="/docs/a">setup</a> and comes before <a rel="next" href="/docs/c">repair</a>; read them in order, since repair assumes the replicas set up in the first chapter are running.</p></div></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('the replication chapter');
    expect(md).toContain('reports its position to the primary');
    expect(md).toContain('since repair assumes the replicas set up');
  });
});

describe('D: help overlays and dialogs shipped in every page', () => {
  it('drops a dialog and a keyboard-shortcut help block from the content', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 5)}
<div class="help-popup"><h2>Keyboard shortcuts</h2><p>Press <kbd>S</kbd> to search</p><p>Press <kbd>?</kbd> to show this help</p></div>
<div role="dialog" aria-label="Preferences"><p>Choose the reading theme for every page of the manual you open.</p></div></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Body paragraph 4');
    expect(md).not.toMatch(/Keyboard shortcuts|show this help|reading theme/);
  });
});

describe('D: per-post clutter of Q&A and forum threads', () => {
  it('drops user cards with badges, post date lines, like counts and sign-in prompts', () => {
    const post = (who: string, body: string) =>
      `<div class="post">${prose(body, 3)}<div class="meta"><span>answered Mar 3, 2021 at 10:02</span>
<div class="user"><a href="/u/1">${who}</a><div>12.5k 4 gold badges 30 silver badges 51 bronze badges</div></div>
<span>12 likes</span></div></div>`;
    const html = shell(
      '',
      `<main><h1>How do I repair a replica?</h1>${post('Ana', 'Question')}${post('Bo', 'Answer')}
<p>You must log in to answer this question.</p><div>Explore related questions</div></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Question paragraph 2');
    expect(md).toContain('Answer paragraph 2');
    expect(md).not.toMatch(/answered Mar|badges|12 likes|log in to answer|Explore related/);
  });

  it('keeps a sentence that merely mentions an answer date inside prose', () => {
    const html = shell(
      '',
      `<main><h1>Changelog</h1><p>The maintainers answered Mar 3, 2021 at 10:02 that the repair path is safe, and the release notes say why in detail for every operator.</p>${prose('Body', 3)}</main>`,
    );
    expect(extractPage(html).markdown).toContain('The maintainers answered Mar 3, 2021');
  });
});

describe('B: a chapter index keeps its contents of the pages below it', () => {
  // A generated manual's chapter page: its title, the list of its sections (other pages), one
  // paragraph. Readability drops the list by its link density.
  const chapter = (links: string) => `<div id="docContent"><div class="chapter">
<div class="titlepage"><h2 class="title">Chapter 4. Replication</h2></div>
<div class="toc"><p><strong>Table of Contents</strong></p><dl class="toc">${links}</dl></div>
<p>Replication keeps a copy of every store on a second machine, so a failed disk loses nothing that was acknowledged to a client.</p>
</div></div>`;
  const sections = (href: (i: number) => string) =>
    ['Streaming copies', 'Log shipping', 'Failover', 'Monitoring lag']
      .map((t, i) => `<dt><a href="${href(i)}">4.${i + 1}. ${t}</a></dt>`)
      .join('');

  it('keeps a table of contents whose links lead to the pages under this one', () => {
    const html = shell('', chapter(sections((i) => `replication-part${i + 1}.html`)));
    const md = extractPage(html, {
      url: 'https://db.example/docs/current/replication.html',
    }).markdown;
    expect(md).toContain('Table of Contents');
    expect(md).toContain('4.3. Failover');
    expect(md).toContain('Replication keeps a copy of every store');
  });

  it('still drops an in-page table of contents and a list of sibling pages', () => {
    const url = 'https://db.example/docs/current/replication.html';
    const inPage = extractPage(shell('', chapter(sections((i) => `#section-${i}`))), { url });
    expect(inPage.markdown).not.toContain('Failover');
    const siblings = extractPage(shell('', chapter(sections((i) => `other-${i}.html`))), { url });
    expect(siblings.markdown).not.toContain('Failover');
    expect(siblings.markdown).toContain('Replication keeps a copy of every store');
  });

  it('leaves such a list out beside a long text: there it is a link block, not the page', () => {
    const long = chapter(sections((i) => `replication-part${i + 1}.html`)).replace(
      '</div></div>',
      `${prose('Body', 8)}</div></div>`,
    );
    const md = extractPage(shell('', long), {
      url: 'https://db.example/docs/current/replication.html',
    }).markdown;
    expect(md).toContain('Body paragraph 7');
    expect(md).not.toContain('Failover');
  });
});

describe('D: drop-down menus a script opens', () => {
  const menu = (id: string, items: string[]) =>
    `<div class="dropdown-panel" id="${id}"><header>Other versions</header><ol>${items
      .map(
        (v) =>
          `<li><a href="/docs/store/${v}">store ${v} manual</a> <span>2026-01-0${v.length}</span></li>`,
      )
      .join('')}</ol></div>`;

  it('drops a language or version picker that a link to nowhere opens, with its label', () => {
    const html = shell(
      '',
      `<div id="content"><a class="dropdown-trigger" data-panel-id="versions" href="#">Latest version ▾</a>
${menu('versions', ['2.4', '2.3', '2.2', '2.1'])}<h1>store(1)</h1>${prose('Body', 5)}</div>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Body paragraph 4');
    expect(md).not.toMatch(/Latest version|Other versions|2\.3/);
  });

  it('keeps a collapsed panel of prose and the panels of tabs', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 4)}
<button aria-controls="more">Read more</button><div id="more" hidden><p>Repair runs in the background: <a href="/a">scrub</a>, then <a href="/b">rebuild</a>, then <a href="/c">verify</a>, and each step is logged so an operator can follow it.</p></div>
<div role="tablist"><button role="tab" aria-controls="p1">Linux</button></div>
<div role="tabpanel" id="p1"><ul><li><a href="/l1">apt</a></li><li><a href="/l2">dnf</a></li><li><a href="/l3">pacman</a></li></ul></div></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Repair runs in the background');
    expect(md).toContain('pacman');
  });
});

describe('A: terminal sessions a script colours', () => {
  const session = (cls: string) =>
    `<pre><code class="${cls}"><span>$ </span>&lt;font color=&quot;#4E9A06&quot;&gt;store&lt;/font&gt; sync
&lt;span style=&quot;background-color:#009485&quot;&gt;&lt;font color=&quot;#D3D7CF&quot;&gt; INFO &lt;/font&gt;&lt;/span&gt; it&amp;apos;s done</code></pre>`;

  it('removes the colouring tags from a console block, leaving the session as shown', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 4)}${session('language-console')}</main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain("$ store sync\n INFO  it's done");
    expect(md).not.toContain('font');
  });

  it('leaves markup samples alone', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Body', 4)}${session('language-html')}</main>`,
    );
    expect(extractPage(html).markdown).toContain('<font color="#4E9A06">store</font>');
  });
});

describe('G: headings built of boxes that CSS spaces apart', () => {
  it('puts a space between adjacent boxes of a heading, not inside words or after one letter', () => {
    const html = shell(
      '',
      `<main><h1>Storage API</h1>${prose('Body', 3)}
<h3><span><span>amount</span></span><span class="type">integer</span></h3>${prose('Amount', 2)}
<h3><span>T</span><span>imeouts</span></h3>${prose('Timeouts', 2)}
<h3>Data<b>sets</b></h3>${prose('Sets', 2)}</main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('### amount integer');
    expect(md).toContain('### Timeouts');
    expect(md).toContain('### Data**sets**');
  });
});

describe('D: the caption of a removed table of contents goes with it', () => {
  it('drops "Table of contents" left alone in its box once the list is gone', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1><div><div>Table of contents</div><nav class="toc"><ul><li><a href="#a">Replication</a></li><li><a href="#b">Repair</a></li></ul></nav></div>
${prose('Body', 4)}<div><p>Price: 5 credits a month</p><footer><a href="/terms">Terms</a></footer></div></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).not.toContain('Table of contents');
    expect(md).toContain('Body paragraph 3');
    // Only navigation takes its caption along: a short line beside a removed footer stays.
    expect(md).toContain('Price: 5 credits a month');
  });
});

describe('G: permalinks set beside their heading', () => {
  const page = (anchor: (id: string, title: string) => string) =>
    shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Intro', 3)}
<div class="heading-wrapper"><h2 id="repair">Repair</h2>${anchor('repair', 'Repair')}</div>
${prose('Repair', 3)}
<div class="heading-wrapper"><h2 id="replicas">Replicas</h2>${anchor('replicas', 'Replicas')}</div>
${prose('Replica', 3)}</main>`,
    );

  it('drops an in-page link to the heading next to it, label and all, and keeps the heading', () => {
    const md = extractPage(
      page(
        (id, t) =>
          `<a class="link-icon" href="#${id}"><span aria-hidden="true">#</span><span>Section titled “${t}”</span></a>`,
      ),
    ).markdown;
    expect(md).toMatch(/^## Repair$/m);
    expect(md).toMatch(/^## Replicas$/m);
    expect(md).not.toContain('Section titled');
    expect(md).toContain('Replica paragraph 2');
  });

  it('keeps a link beside a heading that points elsewhere, or carries a sentence of its own', () => {
    const doc = parseDocument(
      page((id) =>
        id === 'repair'
          ? '<a href="#replicas">How replicas are placed</a>'
          : `<a href="#${id}">Replicas are copies kept on three machines in different racks, read in turn and repaired when their checksums disagree</a>`,
      ),
    );
    const stats = cleanDocument(doc);
    expect(stats.anchors).toBe(0);
    const links = Array.from(doc.querySelectorAll('.heading-wrapper a')).map((a) => textOf(a));
    expect(links).toEqual([
      'How replicas are placed',
      expect.stringContaining('Replicas are copies kept on three machines'),
    ]);
  });
});

describe('D: screen-reader-only labels', () => {
  it('drops the label of a link or button, keeps the text an icon stands for elsewhere', () => {
    const html = shell(
      '',
      `<main><h1>Storage plans</h1>${prose('Plans', 3)}
<p>Read the <a href="https://status.example.com/">status page<span class="sr-only"> (opens in a new tab)</span></a> before you migrate.</p>
<table><thead><tr><th>Feature</th><th>Basic</th><th>Pro</th></tr></thead><tbody>
<tr><th>Replication</th><td><i class="icon-check"></i><span class="sr-only">Included</span></td><td><i class="icon-check"></i><span class="visually-hidden">Included</span></td></tr>
<tr><th>Point-in-time restore</th><td><i class="icon-x"></i><span class="screen-reader-text">Not included</span></td><td><i class="icon-check"></i><span class="sr-only">Included</span></td></tr>
</tbody></table>${prose('More', 2)}</main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).not.toContain('opens in a new tab');
    expect(md).toContain('[status page](https://status.example.com/)');
    expect(md).toMatch(/\| Point-in-time restore \| Not included \| Included \|/);
  });
});

describe('A: note boxes written as <aside>', () => {
  const page = (box: string) =>
    shell(
      '<meta property="og:type" content="article">',
      `<div class="layout"><aside class="sidebar"><ul>${Array.from({ length: 8 }, (_, i) => `<li><a href="/docs/${i}">Guide ${i}</a></li>`).join('')}</ul></aside>
<main><article><h1>Storage guide</h1>${prose('Intro', 3)}
${box}
${prose('Outro', 3)}</article></main></div>`,
    );

  it('keeps a warning between paragraphs, and still drops the page sidebar', () => {
    const md = extractPage(
      page(
        '<aside aria-label="Caution" class="callout callout--caution"><p class="callout__title">Caution</p><div><p>Repairing a replica overwrites its local changes; take a snapshot first.</p></div></aside>',
      ),
    ).markdown;
    expect(md).toContain(
      'Repairing a replica overwrites its local changes; take a snapshot first.',
    );
    expect(md).toContain('Outro paragraph 2');
    expect(md).not.toContain('Guide 3');
  });

  it('leaves out a quoted post, a link preview and a bare date line written as <aside>', () => {
    for (const box of [
      '<aside class="quote"><div class="title">ana wrote:</div><blockquote><p>Repair never finished on my cluster after the upgrade to version two.</p></blockquote></aside>',
      '<aside class="preview"><header><a href="https://elsewhere.example/">elsewhere.example</a></header><article><h3><a href="https://elsewhere.example/post">A post somewhere else</a></h3><p>What another site says about repairing replicas at scale.</p></article></aside>',
      '<aside class="source-file"><span>Last update: November 3, 2026 by the storage team</span></aside>',
    ]) {
      const md = extractPage(page(box)).markdown;
      expect(md).toContain('Outro paragraph 2');
      expect(md).not.toMatch(/Repair never finished|another site says|Last update/);
    }
  });
});

describe('A: a code block keeps its code, not the copy control drawn beside it', () => {
  it('drops a "Copy" tooltip next to the block, keeps a sentence that mentions copying', () => {
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Intro', 3)}
<div class="code-frame"><div class="code-body"><pre><code>store.repair('replica-2')</code></pre></div>
<div class="toolbar"><button aria-label="Copy the code"></button><div class="tooltip">Copied!</div><div class="tooltip">Copy</div></div></div>
<p>Copy the snippet above into your shell.</p>${prose('Outro', 3)}</main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain("store.repair('replica-2')");
    expect(md).not.toMatch(/^Copy$|^Copied!$/m);
    expect(md).toContain('Copy the snippet above into your shell.');
  });

  it('drops every copy label when many code frames share one parent (each box searched once)', () => {
    const frame = (i: number) =>
      `<div class="code-frame"><div class="code-body"><pre><code>store.repair('replica-${i}')</code></pre></div><div class="toolbar"><button></button><div class="tooltip">Copy</div></div></div>`;
    // Frames side by side, and bare blocks whose labels sit directly beside them in the shared box.
    const bare = (i: number) => `<pre><code>store.check(${i})</code></pre><span>Copy code</span>`;
    const html = shell(
      '',
      `<main><h1>Storage guide</h1>${prose('Intro', 3)}<div class="steps">${[0, 1, 2, 3].map(frame).join('')}${[0, 1, 2].map(bare).join('')}</div>${prose('Outro', 3)}</main>`,
    );
    const md = extractPage(html).markdown;
    for (const i of [0, 1, 2, 3]) expect(md).toContain(`store.repair('replica-${i}')`);
    for (const i of [0, 1, 2]) expect(md).toContain(`store.check(${i})`);
    expect(md).not.toMatch(/^Copy$|^Copy code$/m);
  });
});
