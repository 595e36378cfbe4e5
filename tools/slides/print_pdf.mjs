// PDF handouts: print each deck's ?print-pdf view with the Chromium the browser test uses.
//
//   node tools/slides/print_pdf.mjs      (make slides-pdf; after make slides)
//
// Writes build/slides/pdf/NN_topic.pdf, one 1280x720 page per slide (more for a slide taller than
// that), fragments shown. Requests that would leave the machine are refused and reported.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const { chromium } = createRequire(path.join(HERE, 'package.json'))('playwright-core');
const SLIDES = path.join(ROOT, 'build', 'slides');
const OUT = path.join(SLIDES, 'pdf');
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const manifest = JSON.parse(fs.readFileSync(path.join(SLIDES, 'manifest.json'), 'utf8'));
fs.mkdirSync(OUT, { recursive: true });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: FLAGS,
});
let bad = 0;
try {
  for (const deck of manifest.decks) {
    const t0 = Date.now();
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
    const remote = [];
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (/^(file|data|blob):/.test(url)) return route.continue();
      remote.push(url);
      return route.abort('blockedbyclient');
    });
    const page = await context.newPage();
    await page.goto(pathToFileURL(path.join(SLIDES, deck.file)).href + '?print-pdf', { waitUntil: 'load' });
    await page.waitForSelector('body[data-deck-ready="1"]', { timeout: 60000 });
    await page.evaluate(() => new Promise((r) => (window.MathJax ? MathJax.Hub.Queue(r) : r())));
    await page.waitForSelector('.pdf-page', { state: 'attached', timeout: 30000 });
    await page.waitForTimeout(500);
    const pages = await page.locator('.pdf-page').count();
    const file = path.join(OUT, `${deck.name}.pdf`);
    await page.pdf({ path: file, printBackground: true, preferCSSPageSize: true });
    await context.close();
    if (remote.length) {
      bad += 1;
      console.error(`${deck.name}: refused requests off the machine: ${[...new Set(remote)].join(', ')}`);
    }
    console.log(`wrote ${path.relative(ROOT, file)} (${pages} pages, `
      + `${Math.round(fs.statSync(file).size / 1024)} KiB, ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
} finally {
  await browser.close();
}
process.exit(bad ? 1 : 0);
