// Browser test of the offline slide decks (make slides), in headless Debian Chromium.
//
//   node --test tests/browser/          (after `make slides`; `make slides-test` does both)
//   SLIDES_ALL=1 node --test tests/browser/    every slide of every deck, not only two or three
//
// For every deck in build/slides/manifest.json it opens, from file://, the title slide and a
// middle slide (the slide with a plot nearest the middle; plus the math slide nearest the middle
// when neither has math), shows every fragment, takes a screenshot under build/screenshots/slides/
// and asserts: the title (first slide) or heading (middle slide) text; at least one rendered image;
// MathJax output where the slide has math, with no TeX left unrendered and no MathJax error; code
// at a readable size, its long lines wrapped at spaces (not inside words); no JavaScript error; no
// failed load; and that no request left the machine (every request is intercepted: only file:,
// data:, blob: and localhost pass, the rest is aborted and reported). Then, per deck, every slide
// with a figure, a table or a diff: each figure is drawn at no less than MIN_IMAGE_SHARE of the size
// the deck's CSS allows it (its natural size, at most the slide's width and 600 px tall), so that no
// figure is shrunk past legibility; a slide taller than the screen scrolls and shows its "more below"
// line; no code block hides lines in a box of its own; a rung's diff colours its added and removed
// lines. Chromium: $CHROMIUM or /usr/bin/chromium, with the flags below and a fresh
// profile (Playwright makes a new --user-data-dir per launch); playwright-core from tools/slides.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(path.join(ROOT, 'tools', 'slides', 'package.json'));
const { chromium } = require('playwright-core');

const SLIDES = path.join(ROOT, 'build', 'slides');
const SHOTS = path.join(ROOT, 'build', 'screenshots', 'slides');
const MANIFEST = path.join(SLIDES, 'manifest.json');
const EXECUTABLE = process.env.CHROMIUM || '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const MIN_CODE_PX = 14; // code font size on screen at 1280x720, after reveal.js scales the slide
const MIN_IMAGE_SHARE = 0.7; // a figure's drawn width over the width the deck's CSS allows it

if (!fs.existsSync(MANIFEST)) {
  throw new Error(`${MANIFEST} not found: run \`make slides\` first`);
}
if (!fs.existsSync(EXECUTABLE)) {
  throw new Error(`${EXECUTABLE} not found: apt-get install chromium (or set CHROMIUM)`);
}
const manifest = JSON.parse(fs.readFileSync(MANIFEST, 'utf8'));

function isLocal(url) {
  if (/^(file|data|blob|about):/i.test(url)) return true;
  try {
    const u = new URL(url);
    return ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname);
  } catch {
    return false;
  }
}

function nearest(units, pred, centre) {
  return units.map((u, i) => [u, i]).filter(([u]) => pred(u))
    .sort((a, b) => Math.abs(a[1] - centre) - Math.abs(b[1] - centre))[0]?.[0];
}

// the slides a deck is checked on: title, middle (with a plot if any), and math if neither has it
function chosenSlides(deck) {
  const units = deck.units;
  if (process.env.SLIDES_ALL) return units; // SLIDES_ALL=1: every slide of every deck (slow)
  const centre = Math.floor(units.length / 2);
  const picks = [units[0]];
  const middle = nearest(units, (u) => u.images > 0 && u !== units[0], centre) ?? units[centre];
  picks.push(middle);
  if (!picks.some((u) => u.math)) {
    const m = nearest(units, (u) => u.math && !picks.includes(u), centre);
    if (m) picks.push(m);
  }
  return picks;
}

const norm = (s) => s.replace(/\s+/g, ' ').trim();

// a fresh context that refuses and records every request that would leave the machine
async function offlineContext(offMachine, failed, errors) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (isLocal(url)) return route.continue();
    offMachine.push(url);
    return route.abort('blockedbyclient');
  });
  context.on('request', (req) => { if (!isLocal(req.url())) offMachine.push(req.url()); });
  context.on('requestfailed', (req) => {
    if (isLocal(req.url())) failed.push(`${req.url()} (${req.failure()?.errorText})`);
  });
  context.on('weberror', (e) => errors.push(String(e.error())));
  return context;
}

let browser;
before(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({ executablePath: EXECUTABLE, headless: true, args: FLAGS });
});
after(async () => {
  await browser?.close();
});

test('manifest lists every notebook', () => {
  const notebooks = fs.readdirSync(path.join(ROOT, 'notebooks')).filter((f) => /^\d\d_.*\.ipynb$/.test(f));
  assert.deepEqual(manifest.decks.map((d) => d.name + '.ipynb').sort(), notebooks.sort());
});

for (const deck of manifest.decks) {
  test(`deck ${deck.name}`, async (t) => {
    const offMachine = [];
    const failed = [];
    const errors = [];
    const context = await offlineContext(offMachine, failed, errors);
    const page = await context.newPage();
    page.on('console', (msg) => { if (msg.type() === 'error') errors.push(msg.text()); });
    page.on('websocket', (ws) => offMachine.push(ws.url()));
    const file = pathToFileURL(path.join(SLIDES, deck.file)).href;
    let images = 0;
    try {
      for (const unit of chosenSlides(deck)) {
        const where = `${deck.name} slide ${unit.h}/${unit.v}`;
        await t.test(where, async () => {
          await page.goto(`${file}#/${unit.h}/${unit.v}`, { waitUntil: 'load' });
          await page.waitForSelector('body[data-deck-ready="1"]', { timeout: 30000 });
          // show every fragment, then wait until MathJax has nothing queued
          await page.evaluate(async () => {
            while (window.Reveal.availableFragments().next) window.Reveal.nextFragment();
            await new Promise((r) => (window.MathJax ? MathJax.Hub.Queue(r) : r()));
          });
          await page.waitForTimeout(300);
          const s = await page.evaluate(() => {
            const R = window.Reveal;
            const slide = R.getCurrentSlide();
            // text as read, math left out; prose also without code (where a $ is not math)
            const text = (el, drop) => {
              const c = el.cloneNode(true);
              c.querySelectorAll('.MathJax_Preview, .mjx-chtml, .MathJax_CHTML, script, .anchor-link' + drop)
                .forEach((x) => x.remove());
              return c.textContent;
            };
            const headingText = (el) => text(el, '');
            const visibleText = (el) => text(el, ', pre, code, .jp-OutputArea');
            const h = slide.querySelector('h1, h2, h3');
            const imgs = [...slide.querySelectorAll('img')].map((img) => {
              const r = img.getBoundingClientRect();
              return { ok: img.complete && img.naturalWidth > 0, w: r.width, h: r.height };
            });
            const tex = [...slide.querySelectorAll('script[type^="math/tex"]')];
            const pre = slide.querySelector('.jp-InputArea pre, .highlight pre');
            return {
              indices: R.getIndices(),
              title: document.title,
              h1: slide.querySelector('h1') ? headingText(slide.querySelector('h1')) : null,
              h2: slide.querySelector('h2') ? headingText(slide.querySelector('h2')) : null,
              heading: h ? headingText(h) : null,
              imgs,
              mathRendered: slide.querySelectorAll('.mjx-chtml.MathJax_CHTML').length,
              mathUnrendered: tex.filter((sc) => !document.getElementById(sc.id + '-Frame')).length,
              mathErrors: slide.querySelectorAll('.mjx-merror, .MathJax_Error, merror').length,
              rawTex: (visibleText(slide).match(/\$[^$\s][^$]*\$|\\\(|\\\[/g) || []).slice(0, 3),
              codePx: pre ? parseFloat(getComputedStyle(pre).fontSize) * R.getScale() : null,
              overflow: Math.max(0, slide.scrollHeight - R.getConfig().height),
              breakAll: [...slide.querySelectorAll('pre')].filter((p) => getComputedStyle(p).wordBreak === 'break-all').length,
            };
          });
          const shot = path.join(SHOTS, `${deck.name}-${unit.h}-${unit.v}.png`);
          await page.screenshot({ path: shot });
          assert.deepEqual([s.indices.h, s.indices.v], [unit.h, unit.v], `${where}: reveal.js is on another slide`);
          if (unit.h === 0 && unit.v === 0) {
            assert.equal(norm(s.h1 ?? ''), deck.title, `${where}: title slide's h1`);
            assert.equal(norm(s.h2 ?? ''), deck.lesson, `${where}: title slide's lesson title (h2)`);
            assert.ok(s.title.includes(deck.lesson), `${where}: <title> is ${JSON.stringify(s.title)}`);
          } else if (unit.heading) {
            assert.equal(norm(s.heading ?? ''), unit.heading, `${where}: heading`);
          }
          const rendered = s.imgs.filter((i) => i.ok && i.w > 0 && i.h > 0).length;
          assert.ok(rendered >= Math.min(unit.images, 1),
            `${where}: ${unit.images} image(s) expected, ${rendered} rendered (${JSON.stringify(s.imgs)})`);
          images += rendered;
          if (unit.math) {
            assert.ok(s.mathRendered > 0, `${where}: the slide has math but MathJax rendered none`);
          }
          assert.equal(s.mathUnrendered, 0, `${where}: ${s.mathUnrendered} TeX expression(s) not typeset`);
          assert.equal(s.mathErrors, 0, `${where}: MathJax errors`);
          assert.deepEqual(s.rawTex, [], `${where}: raw TeX visible`);
          assert.equal(s.breakAll, 0, `${where}: ${s.breakAll} code or output block(s) break lines inside words`);
          if (s.codePx !== null) {
            assert.ok(s.codePx >= MIN_CODE_PX, `${where}: code at ${s.codePx.toFixed(1)} px on screen`);
          }
          console.log(`${where}: "${norm(s.heading ?? '')}", ${rendered} image(s), ${s.mathRendered} math,`
            + ` code ${s.codePx?.toFixed(1) ?? '-'} px`
            + (s.overflow > 0 ? `, ${s.overflow} px taller than the slide (scrolls)` : '')
            + ` -> ${path.relative(ROOT, shot)}`);
        });
      }
      assert.ok(images >= 1, `${deck.name}: no rendered image on the slides opened`);
      assert.deepEqual([...new Set(offMachine)], [], `${deck.name}: requests that would leave the machine`);
      assert.deepEqual(failed, [], `${deck.name}: local loads that failed`);
      assert.deepEqual(errors, [], `${deck.name}: JavaScript errors`);
    } finally {
      await context.close();
    }
  });
}

// Every slide with a figure or a table, opened in one page (Reveal.slide): figures legible, long slides scroll
// and say so. The smallest share each deck draws a figure at is printed.
for (const deck of manifest.decks) {
  const units = deck.units.filter((u) => u.images > 0 || u.tables > 0 || u.diffs > 0);
  test(`deck ${deck.name}: figures legible, diffs coloured, long slides say they scroll`, { skip: !units.length && 'no figure, table or diff' }, async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    const page = await context.newPage();
    const problems = [];
    let worst = null;
    let scrolling = 0;
    let diffs = 0;
    try {
      await page.goto(`${pathToFileURL(path.join(SLIDES, deck.file)).href}#/${units[0].h}/${units[0].v}`, { waitUntil: 'load' });
      await page.waitForSelector('body[data-deck-ready="1"]', { timeout: 30000 });
      for (const unit of units) {
        if (unit !== units[0]) {
          await page.evaluate(([h, v]) => window.Reveal.slide(h, v), [unit.h, unit.v]);
          await page.waitForSelector('body[data-deck-ready="1"]', { timeout: 30000 });
        }
        await page.evaluate(async () => {
          while (window.Reveal.availableFragments().next) window.Reveal.nextFragment();
          await Promise.all([...window.Reveal.getCurrentSlide().querySelectorAll('img')]
            .map((i) => (i.complete ? null : new Promise((r) => { i.onload = r; i.onerror = r; }))));
        });
        const s = await page.evaluate((share) => {
          const R = window.Reveal;
          const slide = R.getCurrentSlide();
          const scale = R.getScale();
          const width = R.getConfig().width;
          const imgs = [...slide.querySelectorAll('.jp-OutputArea img, .jp-RenderedMarkdown img')]
            .filter((img) => img.naturalWidth > 0)
            .map((img) => {
              const allowed = Math.min(img.naturalWidth, width, img.naturalWidth * 600 / img.naturalHeight);
              const drawn = img.getBoundingClientRect().width / scale;
              return { natural: [img.naturalWidth, img.naturalHeight], drawn: Math.round(drawn), share: drawn / allowed };
            });
          const scroller = slide.scrollHeight > slide.clientHeight + 4 && getComputedStyle(slide).overflowY === 'scroll';
          const hint = slide.querySelector(':scope > .course-scroll-hint');
          const hr = hint?.getBoundingClientRect();
          const sr = slide.getBoundingClientRect();
          const bg = (sel) => [...slide.querySelectorAll(sel)].map((e) => getComputedStyle(e).backgroundColor);
          return {
            imgs,
            diffAdd: bg('.course-diff-add'),
            diffDel: bg('.course-diff-del'),
            diffLines: slide.querySelectorAll('pre.course-diff span[class^="course-diff-"]').length,
            boxed: [...slide.querySelectorAll('pre, pre code')].filter((c) => c.scrollHeight > c.clientHeight + 2)
              .map((c) => `${c.tagName.toLowerCase()} showing ${c.clientHeight} of ${c.scrollHeight} px`),
            taller: slide.scrollHeight - R.getConfig().height,
            scroller,
            hintShown: !!hint && getComputedStyle(hint).visibility === 'visible' && hr.height > 0
              && hr.bottom <= sr.bottom + 1 && hr.top >= sr.top,
          };
        }, MIN_IMAGE_SHARE);
        const where = `${deck.name} slide ${unit.h}/${unit.v}`;
        for (const i of s.imgs) {
          if (!worst || i.share < worst.share) worst = { ...i, where, unit };
          if (i.share < MIN_IMAGE_SHARE) {
            problems.push(`${where}: a ${i.natural.join('x')} figure drawn ${i.drawn} px wide, ${(100 * i.share).toFixed(0)}% of what the slide allows`);
          }
        }
        for (const b of s.boxed) problems.push(`${where}: a code block scrolls on its own (${b})`);
        if (unit.diffs > 0) {          // a rung's diff: added and removed lines coloured, each in its own colour
          const clear = (c) => c === 'rgba(0, 0, 0, 0)' || c === 'transparent';
          if (!s.diffAdd.length && !s.diffDel.length) problems.push(`${where}: no diff lines marked`);
          if (s.diffLines !== unit.diff_lines) {
            problems.push(`${where}: ${s.diffLines} of the diff's ${unit.diff_lines} lines inside its block`);
          }
          if ([...s.diffAdd, ...s.diffDel].some(clear)) problems.push(`${where}: diff lines without colour`);
          if (s.diffAdd.length && s.diffDel.length && s.diffAdd[0] === s.diffDel[0]) {
            problems.push(`${where}: added and removed lines in the same colour`);
          }
          diffs += 1;
          if (diffs === 1) {
            await page.evaluate(() => window.Reveal.getCurrentSlide().querySelector('.course-diff')
              ?.scrollIntoView({ block: 'start' }));
            await page.screenshot({ path: path.join(SHOTS, `${deck.name}-${unit.h}-${unit.v}-diff.png`) });
          }
        }
        if (s.taller > 40) {
          scrolling += 1;
          if (!s.scroller) problems.push(`${where}: ${s.taller} px taller than the slide but does not scroll`);
          else if (!s.hintShown) problems.push(`${where}: scrolls, but shows no "more below" line`);
          if (s.scroller && scrolling === 1) {      // the first slide that scrolls: its "more below" line
            await page.screenshot({ path: path.join(SHOTS, `${deck.name}-${unit.h}-${unit.v}-scrolls.png`) });
          }
        }
      }
      if (worst) {      // the slide whose figure is drawn smallest
        await page.evaluate(([h, v]) => window.Reveal.slide(h, v), [worst.unit.h, worst.unit.v]);
        await page.waitForSelector('body[data-deck-ready="1"]', { timeout: 30000 });
        await page.evaluate((w) => [...window.Reveal.getCurrentSlide().querySelectorAll('img')]
          .find((i) => i.naturalWidth === w)?.scrollIntoView({ block: 'center' }), worst.natural[0]);
        await page.screenshot({ path: path.join(SHOTS, `${deck.name}-${worst.unit.h}-${worst.unit.v}-smallest-figure.png`) });
      }
      console.log(`${deck.name}: ${units.length} slides with figures, tables or diffs, ${scrolling} scroll, ${diffs} diffs coloured`
        + (worst ? `; smallest figure drawn at ${(100 * worst.share).toFixed(0)}% (${worst.where}, ${worst.natural.join('x')} -> ${worst.drawn} px wide)` : ''));
      assert.deepEqual(problems, [], `${deck.name}: figures too small or long slides without a sign that they scroll`);
    } finally {
      await context.close();
    }
  });
}

// The HTML site of `make course` (build/html/): the index links every lesson, and a lesson page
// with math and plots renders them offline too (when make course found local MathJax/RequireJS).
const SITE = path.join(ROOT, 'build', 'html');
test('HTML site: index and a lesson page, offline', { skip: !fs.existsSync(path.join(SITE, 'index.html')) && 'no build/html (make course)' }, async () => {
  const offMachine = [];
  const failed = [];
  const errors = [];
  const context = await offlineContext(offMachine, failed, errors);
  try {
    const page = await context.newPage();
    await page.goto(pathToFileURL(path.join(SITE, 'index.html')).href);
    const links = await page.$$eval('ol li > a:first-child', (as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(links, manifest.decks.map((d) => `${d.name}.html`), 'index.html links every lesson');
    const deck = manifest.decks.find((d) => d.units.some((u) => u.math)) ?? manifest.decks[0];
    await page.goto(pathToFileURL(path.join(SITE, `${deck.name}.html`)).href, { waitUntil: 'load' });
    await page.evaluate(() => new Promise((r) => (window.MathJax && MathJax.Hub ? MathJax.Hub.Queue(r) : r())));
    const s = await page.evaluate(() => ({
      h2: document.querySelector('h2')?.textContent ?? '',
      imgs: [...document.querySelectorAll('img')].filter((i) => i.complete && i.naturalWidth > 0).length,
      math: document.querySelectorAll('.mjx-chtml.MathJax_CHTML').length,
      local: !!document.querySelector('script[src^="assets/mathjax/"]'),
    }));
    await page.screenshot({ path: path.join(SHOTS, `site-${deck.name}.png`) });
    assert.ok(s.h2.includes(deck.lesson), `${deck.name}.html: lesson title ${JSON.stringify(s.h2)}`);
    assert.ok(s.imgs >= 1, `${deck.name}.html: no rendered image`);
    if (s.local && deck.units.some((u) => u.math)) assert.ok(s.math > 0, `${deck.name}.html: math not rendered`);
    console.log(`site ${deck.name}.html: ${s.imgs} image(s), ${s.math} math, MathJax ${s.local ? 'local' : 'from a CDN (not checked offline)'}`);
    if (s.local) assert.deepEqual([...new Set(offMachine)], [], 'HTML site: requests that would leave the machine');
    assert.deepEqual(failed.filter((f) => !/^https?:/.test(f)), [], 'HTML site: local loads that failed');
    assert.deepEqual(errors, [], 'HTML site: JavaScript errors');
  } finally {
    await context.close();
  }
});
