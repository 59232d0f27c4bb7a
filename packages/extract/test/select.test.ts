import { describe, expect, it } from 'vitest';
import { textLength } from '../src/dom.js';
import { parseDocument, textOf } from '../src/index.js';
import {
  closestWhere,
  collectUnder,
  hasAnyClass,
  invalidateElements,
  selectAll,
  selectFirst,
  tagIn,
} from '../src/select.js';

const page = `<!doctype html><html><head><title>T</title></head><body>
<header><nav id="top"><a href="/">Home</a></nav></header>
<main class="wide  page-body"><h1>Title</h1>
<section><h2 class="scroll-mt-4">Part</h2><p>One <a href="#x">x</a></p></section>
<template id="tpl"><p class="inside">not on the page</p></template>
<div hidden><p>hidden</p></div>
</main><footer><p>Legal</p></footer></body></html>`;

const ids = (els: ReadonlyArray<{ localName: string; id: string }>) =>
  els.map((e) => (e.id ? `${e.localName}#${e.id}` : e.localName));

describe('selectAll: page-wide lookups over one listing of the page', () => {
  it('returns what querySelectorAll returns, in document order, template content excluded', () => {
    const doc = parseDocument(page);
    for (const [sel, test] of [
      ['p', tagIn('p')],
      ['h1, h2, a', tagIn('h1', 'h2', 'a')],
      ['[hidden]', (e: { hasAttribute(n: string): boolean }) => e.hasAttribute('hidden')],
      ['*', () => true],
    ] as const) {
      expect(ids(selectAll(doc, doc, test))).toEqual(ids(Array.from(doc.querySelectorAll(sel))));
      expect(ids(selectAll(doc, doc.body!, test))).toEqual(
        ids(Array.from(doc.body!.querySelectorAll(sel))),
      );
    }
    expect(selectAll(doc, doc, tagIn('p')).some((p) => p.className === 'inside')).toBe(false);
  });

  it('skips what was removed after the listing, and everything inside it', () => {
    const doc = parseDocument(page);
    expect(selectAll(doc, doc, tagIn('a'))).toHaveLength(2);
    doc.querySelector('header')!.remove();
    expect(ids(selectAll(doc, doc, tagIn('a', 'nav', 'header')))).toEqual(['a']);
    expect(selectFirst(doc, doc.body!, tagIn('nav'))).toBeNull();
  });

  it('limits to the root given, the root itself excluded', () => {
    const doc = parseDocument(page);
    const main = doc.querySelector('main')!;
    expect(ids(selectAll(doc, main, tagIn('p', 'main')))).toEqual(['p', 'p']);
  });

  it('sees inserted elements only after invalidateElements', () => {
    const doc = parseDocument(page);
    expect(selectAll(doc, doc, tagIn('aside'))).toHaveLength(0);
    doc.body!.appendChild(doc.createElement('aside'));
    expect(selectAll(doc, doc, tagIn('aside'))).toHaveLength(0);
    invalidateElements(doc);
    expect(selectAll(doc, doc, tagIn('aside'))).toHaveLength(1);
  });
});

describe('subtree helpers', () => {
  it('collectUnder matches querySelectorAll on a detached copy', () => {
    const doc = parseDocument(page);
    const copy = doc.querySelector('main')!.cloneNode(true) as ReturnType<typeof doc.createElement>;
    expect(ids(collectUnder(copy, tagIn('p', 'h2')))).toEqual(
      ids(Array.from(copy.querySelectorAll('p, h2'))),
    );
  });

  it('matches elements created with an upper-case name as selectors do (Readability makes SPAN, P)', () => {
    const doc = parseDocument(page);
    const span = doc.createElement('SPAN');
    doc.querySelector('main')!.appendChild(span);
    invalidateElements(doc);
    expect(selectAll(doc, doc, tagIn('span'))).toEqual([span]);
    expect(collectUnder(doc.body!, tagIn('span'))).toEqual([span]);
    expect(Array.from(doc.querySelectorAll('span'))).toEqual([span]);
  });

  it('closestWhere includes the element itself, then walks up', () => {
    const doc = parseDocument(page);
    const a = doc.querySelector('nav a')!;
    expect(closestWhere(a, tagIn('a'))).toBe(a);
    expect(closestWhere(a, tagIn('header'))?.localName).toBe('header');
    expect(closestWhere(a, tagIn('footer'))).toBeNull();
  });

  it('hasAnyClass reads whitespace-separated tokens, not substrings', () => {
    const doc = parseDocument(page);
    const main = doc.querySelector('main')!;
    expect(hasAnyClass(main, new Set(['page-body']))).toBe(true);
    expect(hasAnyClass(main, new Set(['page']))).toBe(false);
    expect(hasAnyClass(doc.querySelector('h1')!, new Set(['page-body']))).toBe(false);
    const el = doc.createElement('div');
    el.setAttribute('class', 'card\tside-bar\nsidebar');
    expect(hasAnyClass(el, new Set(['sidebar']))).toBe(true);
    expect(hasAnyClass(el, new Set(['side', 'bar', 'car']))).toBe(false);
  });
});

describe('textLength', () => {
  it('is textOf(node).length for every kind of whitespace, without building the string', () => {
    const doc = parseDocument(
      '<html><body><div id="t">\n\t <p>  Two\u00a0\u00a0words </p>\r\n<p>\u2003and\u3000more\ufeff</p> \u200b<span>zero-width stays</span>\n</div></body></html>',
    );
    const el = doc.querySelector('#t')!;
    expect(textLength(el)).toBe(textOf(el).length);
    expect(textLength(doc.createElement('p'))).toBe(0);
  });
});
