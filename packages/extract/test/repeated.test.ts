import { describe, expect, it } from 'vitest';
import { extractPage } from '../src/index.js';

const shell = (body: string, head = '') =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Garden tools</title>${head}</head><body>
<header><nav><a href="/">Home</a> <a href="/shop">Shop</a> <a href="/help">Help</a></nav></header>
${body}
<footer><p>© 2026 Example Garden Supply. All rights reserved.</p></footer></body></html>`;

const sentences = (topic: string, n: number) =>
  Array.from(
    { length: n },
    (_, i) =>
      `<p>${topic} note ${i}: the blade stays sharp for a whole season when it is dried after use and oiled before it goes back on the wall.</p>`,
  ).join('');

describe('D: recommendation carousels on product pages', () => {
  const card = (i: number) =>
    `<li><div><h3>Pruning shears model ${i} with a forged steel blade</h3><span>$${20 + i}.99</span><span>+ $4.50 delivery</span><span>Seller 99.${i}% positive</span></div><a href="/item/${i}" aria-label="Pruning shears model ${i}"></a></li>`;

  it('drops a carousel of cards opened by a "people who viewed" heading, though each card link is empty', () => {
    const html = shell(
      `<main><h1>Hedge shears</h1>${sentences('Shears', 5)}
<section><h2>People who viewed this item also viewed</h2><ul>${Array.from({ length: 8 }, (_, i) => card(i)).join('')}</ul></section></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Shears note 4');
    expect(md).not.toContain('People who viewed');
    expect(md).not.toContain('Pruning shears model 3');
  });

  it('drops "Similar threads" and "Related searches" lists', () => {
    const links = (what: string) =>
      Array.from(
        { length: 8 },
        (_, i) =>
          `<li><a href="/${what}/${i}">A ${what} about sharpening garden tools, part ${i}</a></li>`,
      ).join('');
    const html = shell(
      `<main><h1>Sharpening shears</h1>${sentences('Sharpening', 5)}
<div><h3>Similar threads</h3><ul>${links('thread')}</ul></div>
<div><h3>Related searches</h3><ul>${links('search')}</ul></div></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Sharpening note 4');
    expect(md).not.toMatch(/Similar threads|Related searches|sharpening garden tools, part/);
  });
});

describe('B: content made of repeated items (posts, rows, cards)', () => {
  const post = (who: string, n: number) =>
    `<div class="message"><div class="user"><a href="/u/${who}">${who}</a><span>Member</span></div>
<div class="body">${sentences(`${who} wrote`, n)}</div></div>`;

  it('keeps every post of a thread when Readability keeps only the first', () => {
    const html = shell(
      `<div class="page"><h1>How often should shears be oiled?</h1>
<div class="thread">${post('Ana', 5)}${post('Bo', 2)}${post('Cy', 2)}${post('Di', 1)}${post('Ed', 1)}</div></div>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Ana wrote note 4');
    expect(md).toContain('Bo wrote note 1');
    expect(md).toContain('Ed wrote note 0');
    expect(md).not.toContain('Example Garden Supply');
  });

  it('keeps the rows of a listing whose only prose is a one-line intro', () => {
    const rows = Array.from(
      { length: 20 },
      (_, i) =>
        `<tr><td>${i + 1}.</td><td><a href="https://jobs.example/${i}">Orchard ${i} is hiring a tree surgeon for the winter pruning season</a> (<a href="/from?site=o${i}">orchard${i}.example</a>)</td></tr><tr><td></td><td>${i + 2} hours ago</td></tr>`,
    ).join('');
    const html = shell(
      `<table><tr><td><p>These are jobs at orchards near you, for the season. See more at <a href="/all">all jobs</a>.</p></td></tr><tr><td><table><tbody>${rows}</tbody></table></td></tr></table>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Orchard 7 is hiring a tree surgeon');
    expect(md).toContain('Orchard 19 is hiring a tree surgeon');
  });

  it('does not trade an article for the comments under it', () => {
    const comment = (i: number) =>
      `<li class="comment"><a href="/u/${i}">reader${i}</a><p>Comment ${i}: I oil mine every week and the hinge never squeaks, but the blade still needs a stone twice a year at least.</p><a href="#reply">Reply</a></li>`;
    const html = shell(
      `<div class="post"><h1>Oiling shears</h1>${sentences('Article', 6)}</div>
<div id="comments"><ol>${Array.from({ length: 30 }, (_, i) => comment(i)).join('')}</ol></div>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Article note 5');
    expect(md).not.toContain('Comment 12');
  });
});

describe('D: filter and sort widgets inside the content', () => {
  it('drops radio buttons, checkboxes with their labels and drop-downs, keeps the text around them', () => {
    const html = shell(
      `<main><h1>Hedge shears</h1>${sentences('Shears', 4)}
<div class="filters"><label><input type="radio" name="r" checked> All reviews (1,204)</label><label><input type="radio" name="r"> Only verified buyers (912)</label>
<input type="checkbox" id="c1"><label for="c1">Played over 10 hours</label>
<select><option>Most helpful first</option><option>Newest first</option></select></div>
<p>Reviews are sorted by helpfulness; a verified buyer wrote every one of the reviews listed here.</p></main>`,
    );
    const md = extractPage(html).markdown;
    expect(md).toContain('Shears note 3');
    expect(md).toContain('a verified buyer wrote every one');
    expect(md).not.toMatch(
      /All reviews \(1,204\)|Only verified buyers|Played over 10 hours|Newest first/,
    );
  });
});
