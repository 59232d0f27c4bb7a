import { describe, expect, it } from 'vitest';
import {
  decodeHtml,
  extractPage,
  languageOfClass,
  markdownToPlainText,
  normalizeMarkdown,
} from '../src/index.js';
import { fencedBlock, fixture, fixtureBytes } from './helpers.js';

const headings = (md: string) => {
  let inFence = false;
  return md.split('\n').filter((l) => {
    if (l.startsWith('```')) inFence = !inFence;
    return !inFence && /^#{1,6} /.test(l);
  });
};

describe('extractPage: Sphinx page', () => {
  const page = extractPage(fixture('sphinx.html'), {
    url: 'https://widgetlib.example.org/en/stable/config.html',
  });

  it('keeps exact ATX headings without pilcrows (the h1 is the title, as in Readability)', () => {
    expect(headings(page.markdown)).toEqual(['## Loading order', '## Keys']);
    expect(page.markdown).not.toContain('¶');
  });

  it('keeps the code block with its language from highlight-python', () => {
    expect(fencedBlock(page.markdown, '```python')).toEqual([
      'from widgetlib import load_settings',
      '',
      '# later sources win',
      'settings = load_settings("widgets.toml")',
      'print(settings.cache_size)',
    ]);
  });

  it('renders the table as GFM', () => {
    expect(page.markdown).toContain(
      '| Key | Type | Default |\n| --- | --- | --- |\n| cache\\_size | int | 128 |\n| timeout | float | 2.5 |',
    );
  });

  it('drops skip link, breadcrumbs, "View page source", sidebar and footer', () => {
    for (const junk of [
      'Skip to main content',
      'View page source',
      'Docs »',
      'API reference',
      'Copyright',
      'Previous',
    ]) {
      expect(page.markdown).not.toContain(junk);
    }
    expect(page.markdown.startsWith('Widgetlib reads its settings')).toBe(true);
  });

  it('reports title and canonical URL', () => {
    expect(page.title).toBe('Configuration — Widgetlib 2.1 documentation');
    expect(page.canonicalUrl).toBe('https://widgetlib.example.org/en/stable/config.html');
    expect(page.lang).toBe('en');
  });
});

describe('extractPage: Docusaurus page', () => {
  const page = extractPage(fixture('docusaurus.html'), {
    url: 'https://queue.acme.example/docs/deploy',
  });

  it('has the headings, without hash links or zero-width anchors', () => {
    expect(headings(page.markdown)).toEqual(['## Configuration', '## Health checks']);
    expect(page.title).toBe('Deploying workers | Acme Queue');
    expect(page.markdown).not.toMatch(/[\u200b#]\s*$/m);
  });

  it('keeps the Prism code block line by line with language js', () => {
    expect(fencedBlock(page.markdown, '```js')).toEqual([
      'export default {',
      "  url: 'redis://127.0.0.1:6379',",
      '  concurrency: 4,',
      '};',
    ]);
  });

  it('drops breadcrumbs, "Edit this page", copy buttons, TOC, sidebar and pagination', () => {
    for (const junk of [
      'Edit this page',
      '🏠',
      'Guides',
      'On this page',
      'Copy',
      'Installation',
      'Scaling',
      'Previous',
      'Built with Docusaurus',
    ]) {
      expect(page.markdown).not.toContain(junk);
    }
    expect(page.markdown).toContain('Drain a worker before stopping it so in-flight jobs finish.');
  });
});

describe('extractPage: 40-line code block full of # comments', () => {
  const html = fixture('code-comments.html');
  const page = extractPage(html);

  it('keeps all 40 lines byte-exact, with language bash', () => {
    const code = fencedBlock(page.markdown, '```bash');
    expect(code).toHaveLength(40);
    expect(code[0]).toBe('# step 1: comment line that must stay code, not a heading');
    expect(code[1]).toBe('echo "running step 2" && sleep 0');
    expect(code[39]).toBe('echo "running step 40" && sleep 0');
  });

  it('strips the "#" permalink anchors from the real headings only', () => {
    expect(headings(page.markdown)).toEqual(['## The script', '## After running']);
  });
});

describe('extractPage: wide table', () => {
  const page = extractPage(fixture('wide-table.html'));

  it('keeps every column and row intact', () => {
    const rows = page.markdown.split('\n').filter((l) => l.startsWith('|'));
    expect(rows).toHaveLength(7);
    expect(rows[0]).toBe(
      '| Region | Zone | Instance type | vCPU | Memory (GiB) | Network | Storage | On-demand $/h | Spot $/h | Reserved 1y $/h | Reserved 3y $/h | Launch year |',
    );
    expect(rows[1]).toBe(`| ${Array(12).fill('---').join(' | ')} |`);
    expect(rows[5]).toBe(
      '| us-east-1 | c | r7.4xlarge | 16 | 128 | up to 15 Gbps | 1 x 950 NVMe SSD | 1.0080 | 0.3920 | 0.6350 | 0.4310 | 2024 |',
    );
  });
});

describe('decodeHtml', () => {
  it('honours a charset declared only in <meta http-equiv>', () => {
    const bytes = fixtureBytes('meta-charset-cp1252.html');
    const html = decodeHtml(bytes);
    const page = extractPage(html);
    expect(page.title).toBe('Café crème — guide');
    expect(page.markdown).toContain('chauffée à 65 °C');
    expect(page.markdown).toContain('« Très bon », dit-on à Genève.');
  });

  it('prefers the Content-Type charset, then a BOM over everything', () => {
    const latin = new Uint8Array([0x63, 0x61, 0x66, 0xe9]);
    expect(decodeHtml(latin, 'text/html; charset=ISO-8859-1')).toBe('café');
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, 0x63, 0x61, 0x66, 0xc3, 0xa9]);
    expect(decodeHtml(bom, 'text/html; charset=iso-8859-1')).toBe('café');
  });

  it('skips unknown labels: valid UTF-8 reads as UTF-8, anything else as windows-1252', () => {
    expect(decodeHtml(new TextEncoder().encode('<meta charset="x-bogus">é'))).toBe(
      '<meta charset="x-bogus">é',
    );
    // The fetcher's fallback, now the benchmark's too: invalid UTF-8 without a declaration.
    expect(decodeHtml(new Uint8Array([0x93, 0x71, 0x94]))).toBe('\u201cq\u201d');
  });
});

describe('Markdown details', () => {
  it('code language comes from language-x, lang-x and highlight classes', () => {
    expect(languageOfClass('prism-code language-tsx')).toBe('tsx');
    expect(languageOfClass('lang-rust')).toBe('rust');
    expect(languageOfClass('highlight-source-python')).toBe('python');
    expect(languageOfClass('highlight highlight-json notranslate')).toBe('json');
    expect(languageOfClass('notranslate')).toBeUndefined();
  });

  it('chooses a fence longer than any backtick run inside the code', () => {
    const md = extractPage(
      '<html><body><main><h1>T</h1><p>' +
        'Intro text. '.repeat(30) +
        '</p><pre><code class="language-md">```js\nx\n```</code></pre></main></body></html>',
    ).markdown;
    expect(md).toContain('````md\n```js\nx\n```\n````');
  });

  it('normalises NFC and whitespace but leaves code and table lines exactly as they are', () => {
    const input =
      'Cafe\u0301\u00a0au lait  \n\n\n\n## Title ¶\n\n```\n  keep   \u00a0 this  \n```\n\n| a  |  b |\n|---|---|';
    expect(normalizeMarkdown(input)).toBe(
      'Café au lait\n\n## Title\n\n```\n  keep   \u00a0 this  \n```\n\n| a  |  b |\n|---|---|',
    );
  });

  it('plain text keeps link text and drops targets, images, autolinks, fences and emphasis', () => {
    const md =
      'See [the guide](https://x.example/a_b) and ![logo](https://x.example/l.png) <https://x.example>.\n\n```js\nconst a = 1;\n```\n\n**bold** *em* snake\\_case';
    expect(markdownToPlainText(md)).toBe(
      'See the guide and  .\n\nconst a = 1;\n\nbold em snake_case',
    );
  });
});
