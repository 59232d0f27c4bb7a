import { Event } from 'linkedom';
import { describe, expect, it } from 'vitest';
import {
  detectNotDocument,
  extractPage,
  parseDocument,
  shortText,
  shortTextContent,
  textLength,
  textOf,
} from '../src/index.js';

const prose =
  'The archive page lists every post of the year with a short summary of each one. '.repeat(8);

describe('parseDocument repairs trees linkedom builds as written', () => {
  it('a document without <html> still has its body', () => {
    const doc = parseDocument(
      `<!DOCTYPE html>\n<head><title>No html tag</title></head>\n<body><main><p>${prose}</p></main></body>`,
    );
    expect(doc.title).toBe('No html tag');
    expect(textOf(doc.body!)).toContain('The archive page lists every post');
  });

  it('a stray <![CDATA[ in the body is a bogus comment, not the rest of the page', () => {
    const doc = parseDocument(
      `<html><head><title>Forum</title></head><body><![CDATA[\n<div id="top"></div><main><p>${prose}</p></main></body></html>`,
    );
    expect(textOf(doc.body!)).toContain('The archive page lists every post');
  });

  it('links before <head> do not hide the body from Readability', () => {
    const links = Array.from(
      { length: 5 },
      (_, i) => `<link rel="alternate" hreflang="x${i}" href="/x${i}">`,
    ).join('\n');
    const html = `<!doctype html><html lang="en">${links}<head><title>Arms</title><link rel="canonical" href="https://shop.example/arms"></head><body><main><h1>Monitor arms</h1><p>${prose}</p></main></body></html>`;
    const page = extractPage(html);
    expect(page.markdown).toContain('The archive page lists every post');
    expect(page.canonicalUrl).toBe('https://shop.example/arms');
    expect(page.lang).toBe('en');
  });
});

// patches/linkedom@*.patch: a node gets its listener Map on its first addEventListener, not
// when it is built (issue 37 item 6). Events must behave as they did before.
describe('events on parsed nodes (linkedom, listener maps made on first use)', () => {
  type Listening = { addEventListener(type: string, f: () => void): void } & {
    removeEventListener(type: string, f: () => void): void;
    dispatchEvent(event: unknown): boolean;
  };
  const parsed = () => {
    const doc = parseDocument(`<html><body><main><p id="p">${prose}</p></main></body></html>`);
    const p = doc.querySelector('#p') as unknown as Listening;
    const main = doc.querySelector('main') as unknown as Listening;
    return { p, main };
  };

  it('a listener added to a parsed element hears a dispatch, and bubbling reaches its parent', () => {
    const { p, main } = parsed();
    const heard: string[] = [];
    p.addEventListener('ping', () => heard.push('p'));
    main.addEventListener('ping', () => heard.push('main'));
    p.dispatchEvent(new Event('ping', { bubbles: true }));
    p.dispatchEvent(new Event('ping'));
    expect(heard).toEqual(['p', 'main', 'p']);
  });

  it('a removed listener is not called; removing from a node that never listened is a no-op', () => {
    const { p, main } = parsed();
    let calls = 0;
    const f = () => {
      calls++;
    };
    expect(() => main.removeEventListener('ping', f)).not.toThrow();
    p.addEventListener('ping', f);
    p.removeEventListener('ping', f);
    expect(p.dispatchEvent(new Event('ping', { bubbles: true }))).toBe(true);
    expect(calls).toBe(0);
  });
});

describe('detector false positives seen on the benchmark pages', () => {
  it('content served in <noscript> (Discourse) is not an empty app shell', () => {
    const html = `<html><head><title>Thread</title><script src="/a.js"></script><script src="/b.js"></script></head><body><section id="main"></section><noscript><div class="topic-body"><p>${prose}</p></div></noscript></body></html>`;
    expect(detectNotDocument(html).ok).toBe(true);
  });

  it('an AEM "cmp-container" page that mentions cookies is not a consent wall', () => {
    const html = `<html><head><title>Products</title></head><body><div class="root container-fluid cmp-container"><main><h1>Products</h1><p>${prose}${prose}</p><p>We use cookies to remember your cart.</p></main></div></body></html>`;
    expect(detectNotDocument(html).ok).toBe(true);
  });
});

describe('shortTextContent', () => {
  const doc = parseDocument(
    '<html><body><p>before</p><div id="d">One <b>two <i>three</i></b><!-- note --><span></span> four<p>five</p></div><p>after</p></body></html>',
  );
  const d = doc.querySelector('#d')!;

  it('is textContent when that fits, nested elements in order and comments left out', () => {
    expect(shortTextContent(d, 100)).toBe(d.textContent);
    expect(shortTextContent(d, 100)).toBe('One two three fourfive');
    expect(shortTextContent(d, (d.textContent ?? '').length)).toBe(d.textContent);
  });

  it('is undefined once the text passes the limit, and never reads past the node', () => {
    expect(shortTextContent(d, (d.textContent ?? '').length - 1)).toBeUndefined();
    expect(shortTextContent(d, 3)).toBeUndefined();
    expect(shortTextContent(doc.querySelector('span')!, 0)).toBe('');
    expect(shortTextContent(doc.querySelector('i')!, 10)).toBe('three');
  });
});

describe('shortText', () => {
  const doc = parseDocument(
    '<html><body><div id="d">\n      <span>Was   this</span>\n      <b>page\n helpful?</b>  \n    </div><p>after</p></body></html>',
  );
  const d = doc.querySelector('#d')!;

  it('is textOf when the collapsed text fits: indentation does not count against the limit', () => {
    expect(textOf(d)).toBe('Was this page helpful?');
    expect((d.textContent ?? '').length).toBeGreaterThan(30);
    expect(shortText(d, 22)).toBe('Was this page helpful?');
    expect(shortText(d, 100)).toBe(textOf(d));
  });

  it('is undefined once the collapsed text passes the limit, as textLength counts it', () => {
    expect(textLength(d)).toBe(22);
    expect(shortText(d, 21)).toBeUndefined();
    expect(shortText(d, 3)).toBeUndefined();
    expect(shortText(doc.querySelector('p')!, 5)).toBe('after');
  });
});
