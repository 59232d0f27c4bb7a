/**
 * Renders the content model to the bytes the sim serves: HTML pages in three site flavours,
 * Markdown twins, robots.txt, sitemaps, llms.txt and the interstitials used by mutations.
 * Page bodies use root-relative links only, so they do not depend on the port they are served
 * from; the canonical link is the one absolute URL in a page.
 */
import { article, type Block, type Inline, type Page, type Section, type Site } from './content.js';
import type { RobotsSpec } from './types.js';

export function escapeHtml(text: string): string {
  if (!/[&<>"]/.test(text)) return text;
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

function inlineHtml(parts: readonly Inline[]): string {
  return parts
    .map((part) => {
      if (typeof part === 'string') return escapeHtml(part);
      if ('code' in part) return `<code>${escapeHtml(part.code)}</code>`;
      if ('strong' in part) return `<strong>${escapeHtml(part.strong)}</strong>`;
      return `<a href="${escapeHtml(part.link)}">${escapeHtml(part.text)}</a>`;
    })
    .join('');
}

function blockHtml(block: Block): string {
  switch (block.kind) {
    case 'p':
      return `<p>${inlineHtml(block.parts)}</p>`;
    case 'code':
      return `<div class="highlight highlight-${block.lang}"><pre><code class="language-${block.lang}">${escapeHtml(block.code)}\n</code></pre><button class="copy-button" type="button" aria-label="Copy code">Copy</button></div>`;
    case 'list': {
      const tag = block.ordered ? 'ol' : 'ul';
      return `<${tag}>\n${block.items.map((item) => `  <li>${inlineHtml(item)}</li>`).join('\n')}\n</${tag}>`;
    }
    case 'table':
      return [
        '<table class="docutils">',
        `<thead><tr>${block.head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead>`,
        '<tbody>',
        ...block.rows.map(
          (row) =>
            `<tr>${row.map((cell, i) => (i === 0 ? `<td><code>${escapeHtml(cell)}</code></td>` : `<td>${escapeHtml(cell)}</td>`)).join('')}</tr>`,
        ),
        '</tbody>',
        '</table>',
      ].join('\n');
  }
}

function headingHtml(site: Site, level: 1 | 2 | 3, text: string, anchor: string): string {
  const t = escapeHtml(text);
  switch (site.flavor) {
    case 'sphinx':
      return `<h${level} id="${anchor}">${t}<a class="headerlink" href="#${anchor}" title="Link to this heading">¶</a></h${level}>`;
    case 'docusaurus':
      return `<h${level} class="anchor anchorWithStickyNavbar" id="${anchor}">${t}<a href="#${anchor}" class="hash-link" aria-label="Direct link to ${t}" title="Direct link to ${t}">\u200b</a></h${level}>`;
    case 'mkdocs':
      return `<h${level} id="${anchor}">${t}<a class="headerlink" href="#${anchor}" title="Permanent link">#</a></h${level}>`;
  }
}

export interface PageChrome {
  readonly canonical: string;
  /** Root-relative URL of the Markdown twin, if twins are on. */
  readonly markdownPath: string | undefined;
  readonly lastModified: number;
  /** Footer "built at" time; changes per request under timestampChurn. */
  readonly builtAt: number;
}

export function articleHtml(site: Site, page: Page): string {
  const out: string[] = [];
  out.push(headingHtml(site, 1, page.spec.title, 'top'));
  for (const block of page.intro) out.push(blockHtml(block));
  for (const section of page.sections) {
    out.push(headingHtml(site, section.level, section.heading, section.anchor));
    for (const block of section.blocks) out.push(blockHtml(block));
  }
  return out.join('\n');
}

function sidebarHtml(site: Site, page: Page): string {
  const section = page.spec.section;
  const items: string[] = [];
  site.sections.forEach((name, i) => {
    const first = site.pages.find((p) => p.section === i);
    if (first === undefined) return;
    if (i !== section) {
      items.push(`<li class="toctree-l1"><a href="${first.path}">${escapeHtml(name)}</a></li>`);
      return;
    }
    // Only the current section is expanded, so sidebars stay small on large hosts.
    const children = site.pages
      .filter((p) => p.section === i)
      .slice(0, 25)
      .map(
        (p) =>
          `<li class="toctree-l2${p.index === page.spec.index ? ' current' : ''}"><a href="${p.path}"${p.index === page.spec.index ? ' aria-current="page"' : ''}>${escapeHtml(p.title)}</a></li>`,
      );
    items.push(
      `<li class="toctree-l1 current"><a href="${first.path}">${escapeHtml(name)}</a><ul>${children.join('')}</ul></li>`,
    );
  });
  return `<aside class="sidebar" aria-label="Sidebar"><nav class="menu"><p class="caption">Contents</p><ul>${items.join('')}</ul></nav></aside>`;
}

function breadcrumbsHtml(site: Site, page: Page): string {
  const crumbs = ['<li><a href="/">Home</a></li>'];
  const sectionName = site.sections[page.spec.section];
  const first = site.pages.find((p) => p.section === page.spec.section);
  if (sectionName !== undefined && first !== undefined) {
    crumbs.push(`<li><a href="${first.path}">${escapeHtml(sectionName)}</a></li>`);
  }
  if (page.spec.index !== 0)
    crumbs.push(`<li aria-current="page">${escapeHtml(page.spec.title)}</li>`);
  return `<nav class="breadcrumbs" aria-label="Breadcrumbs"><ol>${crumbs.join('')}</ol></nav>`;
}

function headerHtml(site: Site): string {
  const links = site.sections
    .map((name, i) => {
      const first = site.pages.find((p) => p.section === i);
      return first === undefined ? '' : `<li><a href="${first.path}">${escapeHtml(name)}</a></li>`;
    })
    .join('');
  return [
    '<header class="site-header">',
    `<a class="logo" href="/">${escapeHtml(site.title)}</a>`,
    `<nav class="navbar" aria-label="Main"><ul>${links}<li><a href="https://status.example.com/">Status</a></li></ul></nav>`,
    '<form class="search" action="/search" method="get" role="search"><input type="search" name="q" placeholder="Search the docs"><button type="submit">Search</button></form>',
    '</header>',
  ].join('\n');
}

export const CONSENT_BANNER =
  '<div id="cookie-consent" class="cookie-banner consent-overlay" role="dialog" aria-modal="false" aria-label="Cookie consent" style="position:fixed;bottom:0;left:0;right:0;z-index:9999">' +
  '<p>We use cookies to improve your experience and to measure how our documentation is used. You can accept all cookies or manage your preferences.</p>' +
  '<button type="button" class="consent-accept">Accept all</button><button type="button" class="consent-reject">Reject non-essential</button><a href="/privacy">Privacy policy</a></div>';

function footerHtml(site: Site, chrome: PageChrome): string {
  const modified = new Date(chrome.lastModified).toISOString();
  const built = new Date(chrome.builtAt).toISOString();
  return [
    '<footer class="site-footer">',
    `<p class="last-updated">Last updated on <time datetime="${modified}">${modified.slice(0, 10)}</time></p>`,
    `<p class="copyright">© ${new Date(chrome.lastModified).getUTCFullYear()} ${escapeHtml(site.product)} Inc. All rights reserved. Page generated <time class="build-time" datetime="${built}">${built}</time>.</p>`,
    '</footer>',
  ].join('\n');
}

export function pageHtml(site: Site, page: Page, chrome: PageChrome): string {
  const title = page.spec.index === 0 ? site.title : `${page.spec.title} — ${site.title}`;
  const editPath =
    page.spec.path === '/' ? 'index' : page.spec.path.replace(/^\/|\/$|\.html$/g, '');
  const mainClass =
    site.flavor === 'docusaurus'
      ? 'theme-doc-markdown markdown'
      : site.flavor === 'sphinx'
        ? 'body'
        : 'md-content';
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    `<meta name="description" content="${escapeHtml(page.description)}">`,
    `<meta name="generator" content="${site.flavor}">`,
    `<link rel="canonical" href="${escapeHtml(chrome.canonical)}">`,
    chrome.markdownPath === undefined
      ? ''
      : `<link rel="alternate" type="text/markdown" href="${escapeHtml(chrome.markdownPath)}">`,
    '<link rel="alternate" type="application/atom+xml" title="Recently updated" href="/feed.xml">',
    '<link rel="stylesheet" href="/assets/site.css">',
    '</head>',
    `<body class="flavor-${site.flavor}">`,
    CONSENT_BANNER,
    headerHtml(site),
    '<div class="layout">',
    sidebarHtml(site, page),
    '<main class="main" id="main-content">',
    breadcrumbsHtml(site, page),
    `<article class="${mainClass}" role="main">`,
    articleHtml(site, page),
    '</article>',
    `<div class="edit-this-page"><a href="https://git.example.com/${site.product.toLowerCase()}/docs/edit/main/${editPath}.md">Edit this page</a></div>`,
    '</main>',
    '</div>',
    footerHtml(site, chrome),
    '<script src="/assets/site.js" defer></script>',
    '</body>',
    '</html>',
    '',
  ]
    .filter((line) => line !== '')
    .join('\n')
    .concat('\n');
}

function inlineMd(parts: readonly Inline[]): string {
  return parts
    .map((part) => {
      if (typeof part === 'string') return part;
      if ('code' in part) return `\`${part.code}\``;
      if ('strong' in part) return `**${part.strong}**`;
      return `[${part.text}](${part.link})`;
    })
    .join('');
}

function blockMd(block: Block): string {
  switch (block.kind) {
    case 'p':
      return inlineMd(block.parts);
    case 'code':
      return `\`\`\`${block.lang}\n${block.code}\n\`\`\``;
    case 'list':
      return block.items
        .map((item, i) => `${block.ordered ? `${i + 1}.` : '-'} ${inlineMd(item)}`)
        .join('\n');
    case 'table':
      return [
        `| ${block.head.join(' | ')} |`,
        `| ${block.head.map(() => '---').join(' | ')} |`,
        ...block.rows.map(
          (row) => `| ${row.map((c, i) => (i === 0 ? `\`${c}\`` : c)).join(' | ')} |`,
        ),
      ].join('\n');
  }
}

function sectionMd(section: Section): string {
  return [`${'#'.repeat(section.level)} ${section.heading}`, ...section.blocks.map(blockMd)].join(
    '\n\n',
  );
}

export function pageMarkdown(page: Page): string {
  return (
    [`# ${page.spec.title}`, ...page.intro.map(blockMd), ...page.sections.map(sectionMd)].join(
      '\n\n',
    ) + '\n'
  );
}

export function robotsTxt(spec: RobotsSpec, origin: string): string {
  if (typeof spec === 'string') return spec;
  const lines = [`User-agent: ${spec.userAgent ?? '*'}`];
  for (const path of spec.disallow ?? []) lines.push(`Disallow: ${path}`);
  for (const path of spec.allow ?? []) lines.push(`Allow: ${path}`);
  if (spec.crawlDelay !== undefined) lines.push(`Crawl-delay: ${spec.crawlDelay}`);
  let text = lines.join('\n') + '\n';
  if (spec.extra !== undefined) text += `\n${spec.extra.trimEnd()}\n`;
  if (spec.sitemap !== false) text += `\nSitemap: ${origin}/sitemap.xml\n`;
  return text;
}

export interface SitemapEntry {
  readonly loc: string;
  readonly lastmod: number;
}

export function sitemapIndexXml(children: readonly SitemapEntry[]): string {
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ...children.map(
      (c) =>
        `  <sitemap>\n    <loc>${escapeHtml(c.loc)}</loc>\n    <lastmod>${new Date(c.lastmod).toISOString()}</lastmod>\n  </sitemap>`,
    ),
    '</sitemapindex>',
    '',
  ].join('\n');
}

export function urlsetXml(entries: readonly SitemapEntry[]): string {
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ...entries.map(
      (e) =>
        `  <url>\n    <loc>${escapeHtml(e.loc)}</loc>\n    <lastmod>${new Date(e.lastmod).toISOString()}</lastmod>\n  </url>`,
    ),
    '</urlset>',
    '',
  ].join('\n');
}

export interface FeedEntry {
  readonly url: string;
  readonly title: string;
  readonly summary: string;
  readonly updated: number;
}

/** Atom feed of recently changed pages: a publisher hint, like the ones real doc sites offer. */
export function atomFeed(site: Site, origin: string, entries: readonly FeedEntry[]): string {
  const updated = new Date(Math.max(0, ...entries.map((e) => e.updated))).toISOString();
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom">',
    `  <title>${escapeHtml(site.title)}: recently updated</title>`,
    `  <id>${escapeHtml(origin)}/</id>`,
    `  <link rel="self" href="${escapeHtml(origin)}/feed.xml"/>`,
    `  <link href="${escapeHtml(origin)}/"/>`,
    `  <updated>${updated}</updated>`,
    ...entries.map((e) =>
      [
        '  <entry>',
        `    <title>${escapeHtml(e.title)}</title>`,
        `    <link href="${escapeHtml(e.url)}"/>`,
        `    <id>${escapeHtml(e.url)}</id>`,
        `    <updated>${new Date(e.updated).toISOString()}</updated>`,
        `    <summary>${escapeHtml(e.summary)}</summary>`,
        '  </entry>',
      ].join('\n'),
    ),
    '</feed>',
    '',
  ].join('\n');
}

export function llmsTxt(
  site: Site,
  origin: string,
  links: readonly { title: string; url: string; section: number }[],
): string {
  const out = [
    `# ${site.title}`,
    '',
    `> Documentation for ${site.product}, ${article(site.domain.name)} service.`,
    '',
  ];
  out.push(
    `${site.product} documentation is organised in ${site.sections.length} sections. Each link points to a Markdown version of the page.`,
    '',
  );
  site.sections.forEach((name, i) => {
    const entries = links.filter((l) => l.section === i);
    if (entries.length === 0) return;
    out.push(`## ${name}`, '', ...entries.map((l) => `- [${l.title}](${l.url})`), '');
  });
  out.push('## Optional', '', `- [Home](${origin}/)`, '');
  return out.join('\n');
}

function shell(title: string, body: string, extraHead = ''): string {
  return `<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>${escapeHtml(title)}</title>\n${extraHead}</head>\n<body>\n${body}\n</body>\n</html>\n`;
}

export function notFoundHtml(site: Site, status: 404 | 410): string {
  const title = status === 404 ? 'Page not found' : 'Page removed';
  const text =
    status === 404
      ? 'The page you requested does not exist. Check the address or use the search.'
      : 'This page has been permanently removed from the documentation.';
  return shell(
    `${title} — ${site.title}`,
    `${headerHtml(site)}\n<main><h1>${title}</h1><p>${text}</p><p><a href="/">Back to the home page</a></p></main>`,
  );
}

/** A soft 404: status 200, but the body says the page is gone. */
export function soft404Html(site: Site): string {
  return shell(
    `Page not found — ${site.title}`,
    `${CONSENT_BANNER}\n${headerHtml(site)}\n<main class="main"><article class="not-found"><h1>Page not found</h1><p>Sorry, we couldn't find the page you were looking for. It may have been moved or deleted.</p><p>Try the <a href="/search">search</a> or go back to the <a href="/">home page</a>.</p></article></main>`,
  );
}

export function consentWallHtml(site: Site): string {
  return shell(
    `${site.title}`,
    [
      '<div id="consent-wall" class="consent-wall" role="dialog" aria-modal="true" aria-labelledby="consent-title">',
      '<h1 id="consent-title">Before you continue</h1>',
      `<p>${escapeHtml(site.product)} and our partners use cookies and similar technologies to store and access information on your device. We need your consent before you can continue to the documentation.</p>`,
      '<form method="post" action="/consent"><button name="consent" value="all" type="submit">Accept all</button><button name="consent" value="essential" type="submit">Reject all</button></form>',
      '<p><a href="/privacy">Manage privacy settings</a></p>',
      '</div>',
    ].join('\n'),
  );
}

export function challengeHtml(): string {
  return shell(
    'Just a moment...',
    [
      '<div class="main-wrapper" role="main"><div class="main-content">',
      '<h1 class="zone-name-title h1">Just a moment...</h1>',
      '<h2 id="challenge-running" class="h2">Checking if the site connection is secure</h2>',
      '<noscript><div id="challenge-error-title"><div class="h2"><span class="icon-wrapper"></span>Enable JavaScript and cookies to continue</div></div></noscript>',
      '<div id="challenge-body-text" class="core-msg spacer">This site needs to review the security of your connection before proceeding.</div>',
      '<div class="footer" role="contentinfo"><div class="footer-inner"><div class="text-center">Performance &amp; security by Cloudflare</div></div></div>',
      '</div></div>',
      '<script>(function(){window._cf_chl_opt={cvId:"3",cType:"managed"};})();</script>',
    ].join('\n'),
    '<meta name="robots" content="noindex,nofollow">\n<meta http-equiv="refresh" content="360">\n',
  );
}

export function loginHtml(site: Site, next: string): string {
  return shell(
    `Sign in — ${site.title}`,
    [
      '<main class="login">',
      `<h1>Sign in to ${escapeHtml(site.product)}</h1>`,
      '<p>You need to sign in to view this page.</p>',
      '<form method="post" action="/login">',
      `<input type="hidden" name="next" value="${escapeHtml(next)}">`,
      '<label>Email <input type="email" name="email" autocomplete="username"></label>',
      '<label>Password <input type="password" name="password" autocomplete="current-password"></label>',
      '<button type="submit">Sign in</button>',
      '</form>',
      '<p><a href="/login/forgot">Forgot your password?</a></p>',
      '</main>',
    ].join('\n'),
  );
}

export function appShellHtml(site: Site, bundlePath: string): string {
  return shell(
    site.title,
    '<noscript>You need to enable JavaScript to run this app.</noscript>\n<div id="root"></div>',
    `<meta name="viewport" content="width=device-width, initial-scale=1">\n<script defer src="${escapeHtml(bundlePath)}"></script>\n`,
  );
}

/** The app-shell bundle: renders the article into #root when executed, or nothing. */
export function appBundleJs(title: string, article: string | undefined): string {
  if (article === undefined) return '/* app shell: nothing is rendered client-side */\n';
  const html = `<main class="main"><article class="doc-content">${article}</article></main>`;
  return [
    '(function () {',
    '  function render() {',
    "    var root = document.getElementById('root');",
    '    if (!root) return;',
    `    document.title = ${JSON.stringify(title)};`,
    `    root.innerHTML = ${JSON.stringify(html).replaceAll('<', '\\u003c')};`,
    '  }',
    "  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', render);",
    '  else render();',
    '})();',
    '',
  ].join('\n');
}

export function searchHtml(site: Site, query: string): string {
  return shell(
    `Search — ${site.title}`,
    `${headerHtml(site)}\n<main><h1>Search results</h1><p>No results for “${escapeHtml(query)}”.</p></main>`,
    '<meta name="robots" content="noindex">\n',
  );
}

export const SITE_CSS =
  'body{font-family:system-ui,sans-serif;margin:0}.layout{display:flex}.sidebar{width:16rem}.main{flex:1;padding:1rem}\n';
export const SITE_JS =
  "document.querySelectorAll('.consent-accept').forEach(function(b){b.addEventListener('click',function(){var e=document.getElementById('cookie-consent');if(e)e.remove();});});\n";
