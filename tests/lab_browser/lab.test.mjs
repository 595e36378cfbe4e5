// JupyterLab as a learner sees it, in headless Debian Chromium, on the CPU backend (make lab-screenshots).
//
//   node --test tests/lab_browser/          (needs the course's .venv, tools/slides/node_modules and Chromium)
//
// It copies notebooks/ to a temporary folder, signs the lessons as `make lab` does (jupyter trust, into a fresh
// Jupyter data folder: a fresh clone's), starts the course's JupyterLab there with the settings `make lab` uses
// (tools/jupyter on JUPYTER_CONFIG_PATH), and checks:
//   - the file browser lists the lessons' notebooks, not their .py halves nor the slides' style sheets;
//   - every lesson opens trusted (the server marks every code cell trusted; the status bar says so);
//   - in lesson 05, run cell by cell: a kernel listing is highlighted (CodeMirror's token classes); a rung's diff
//     colours its added and removed lines; try_kernel with a learner's value marks the learner's row and says what
//     the record found; a wrong knob value shows the course's message and fix without traceback frames;
//   - no output line wraps inside a word (at 1400 px).
// Screenshots of each go to build/screenshots/lab/. Without Chromium, the .venv or playwright-core every test
// is skipped with the reason.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SHOTS = path.join(ROOT, 'build', 'screenshots', 'lab');
const EXECUTABLE = process.env.CHROMIUM || '/usr/bin/chromium';
const JUPYTER = path.join(ROOT, '.venv', 'bin', 'jupyter');
const PLAYWRIGHT = path.join(ROOT, 'tools', 'slides', 'node_modules', 'playwright-core');
const LESSON = '05_closing_the_gap.ipynb';
const TOKEN = 'course-lab-test';

const missing = [
  !fs.existsSync(EXECUTABLE) && `${EXECUTABLE} (apt-get install chromium, or set CHROMIUM)`,
  !fs.existsSync(JUPYTER) && '.venv/bin/jupyter (make .venv/.installed)',
  !fs.existsSync(PLAYWRIGHT) && 'tools/slides/node_modules/playwright-core (npm ci --prefix tools/slides)',
].filter(Boolean);
const SKIP = missing.length ? `JupyterLab browser test skipped: missing ${missing.join('; ')}` : false;
if (SKIP) console.log(SKIP);

let server;
let base;
let browser;
let page;
let work;
const ran = []; // the cells of lesson 05 this test ran
const lessons = fs.readdirSync(path.join(ROOT, 'notebooks')).filter((f) => /^\d\d_.*\.ipynb$/.test(f)).sort();

async function startLab() {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'course-lab-'));
  const nbs = path.join(work, 'notebooks');
  fs.cpSync(path.join(ROOT, 'notebooks'), nbs, { recursive: true, preserveTimestamps: true,
    filter: (src) => !/\.ipynb_checkpoints|__pycache__/.test(src) });
  const env = { ...process.env, COURSE_DEVICE: 'cpu', PYTHONDONTWRITEBYTECODE: '1',
    JUPYTER_CONFIG_DIR: path.join(work, 'config'), JUPYTER_DATA_DIR: path.join(work, 'data'),
    JUPYTER_RUNTIME_DIR: path.join(work, 'runtime'), JUPYTER_CONFIG_PATH: path.join(ROOT, 'tools', 'jupyter') };
  // a fresh user's settings, without the "get notified about Jupyter news?" toast over the outputs
  const settings = path.join(work, 'settings', '@jupyterlab', 'apputils-extension');
  fs.mkdirSync(settings, { recursive: true });
  fs.writeFileSync(path.join(settings, 'notification.jupyterlab-settings'), '{"fetchNews": "false"}');
  env.JUPYTERLAB_SETTINGS_DIR = path.join(work, 'settings');
  // what `make lab` does before it starts JupyterLab: sign the lessons for this user
  execFileSync(JUPYTER, ['trust', ...lessons.map((f) => path.join(nbs, f))], { env, stdio: 'ignore' });
  server = spawn(JUPYTER, ['lab', '--no-browser', '--port=0', `--ServerApp.token=${TOKEN}`,
    `--ServerApp.root_dir=${nbs}`, '--LabApp.expose_app_in_browser=True', '--allow-root'],
  { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`JupyterLab did not start in 60 s:\n${log}`)), 60000);
    const seen = (chunk) => {
      log += chunk;
      const m = log.match(/(http:\/\/(?:127\.0\.0\.1|localhost):\d+)\/lab/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    };
    server.stdout.on('data', seen);
    server.stderr.on('data', seen);
    server.on('exit', (code) => reject(new Error(`JupyterLab exited (${code}):\n${log}`)));
  });
}

const api = async (p) => (await fetch(`${base}/api/contents/${p}?token=${TOKEN}`)).json();

before(async () => {
  if (SKIP) return;
  fs.mkdirSync(SHOTS, { recursive: true });
  await startLab();
  const require = createRequire(path.join(ROOT, 'tools', 'slides', 'package.json'));
  const { chromium } = require('playwright-core');
  browser = await chromium.launch({ executablePath: EXECUTABLE, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
  await page.goto(`${base}/lab/tree/${LESSON}?token=${TOKEN}&reset`);
  await page.waitForSelector('.jp-Notebook .jp-Cell', { timeout: 60000 });
  await page.waitForFunction(() => window.jupyterapp?.shell?.currentWidget?.sessionContext?.session?.kernel
    ?.status === 'idle', null, { timeout: 60000 });
});

after(async () => {
  await browser?.close();
  if (server?.pid) {
    try { process.kill(-server.pid, 'SIGTERM'); } catch { /* already gone */ }
  }
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

// run the cell at `index` of the open notebook and wait until its kernel is idle again
async function runCell(index) {
  await page.evaluate(async (i) => {
    const panel = window.jupyterapp.shell.currentWidget;
    panel.content.activeCellIndex = i;
    await window.jupyterapp.commands.execute('notebook:run-cell');
  }, index);
  await page.waitForFunction((i) => {
    const panel = window.jupyterapp.shell.currentWidget;
    const cell = panel.content.widgets[i];
    return panel.sessionContext.session.kernel.status === 'idle' && cell.model.executionCount !== null
      && !cell.node.querySelector('.jp-InputPrompt')?.textContent.includes('*');
  }, index, { timeout: 60000 });
}

// the index of the first code cell whose source starts with `start`; a new cell at the end with `source` if none
async function cellIndex(start) {
  return page.evaluate((s) => window.jupyterapp.shell.currentWidget.content.widgets
    .findIndex((c) => c.model.type === 'code' && c.model.sharedModel.getSource().startsWith(s)), start);
}

async function appendCell(source) {
  return page.evaluate((src) => {
    const nb = window.jupyterapp.shell.currentWidget.content;
    nb.activeCellIndex = nb.widgets.length - 1;
    return window.jupyterapp.commands.execute('notebook:insert-cell-below').then(() => {
      nb.activeCell.model.sharedModel.setSource(src);
      return nb.activeCellIndex;
    });
  }, source);
}

async function shot(index, name) {
  const cell = page.locator('.jp-Notebook .jp-Cell').nth(index);
  await cell.scrollIntoViewIfNeeded();
  await cell.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

test('the file browser lists the lessons, not their .py halves or style sheets', { skip: SKIP }, async () => {
  const listed = (await api('')).content.map((x) => x.name).sort();
  assert.deepEqual(listed.filter((n) => /\.(py|css|toml)$/.test(n)), [], 'hidden from the listing');
  assert.deepEqual(listed.filter((n) => n.endsWith('.ipynb')), lessons);
  // hidden, not gone: jupytext's pair and jupyterlab-rise's style sheets are still served
  for (const f of ['rise.css', LESSON.replace('.ipynb', '.css'), LESSON.replace('.ipynb', '.py')]) {
    const r = await fetch(`${base}/files/${f}?token=${TOKEN}`);
    assert.equal(r.status, 200, `${f} is served`);
  }
  await page.evaluate(() => window.jupyterapp.commands.execute('filebrowser:activate'));
  await page.waitForSelector('.jp-DirListing-item');
  const shown = await page.$$eval('.jp-DirListing-itemName', (els) => els.map((e) => e.textContent.trim()));
  assert.deepEqual(shown.filter((n) => /\.(py|css)$/.test(n)), []);
  await page.locator('#filebrowser').screenshot({ path: path.join(SHOTS, 'file-browser.png') });
});

test('every lesson opens trusted', { skip: SKIP }, async () => {
  // this test starts JupyterLab as `make lab` does: the lessons signed first, tools/jupyter on the config path
  const recipe = execFileSync('make', ['-n', '-W', '.venv/.installed', 'lab'], { cwd: ROOT, encoding: 'utf8' });
  assert.match(recipe, /jupyter trust notebooks\/\[0-9\]\[0-9\]_\*\.ipynb/, recipe);
  assert.match(recipe, new RegExp(`JUPYTER_CONFIG_PATH="${path.join(ROOT, 'tools', 'jupyter')}[^"]*" \\S+jupyter lab`), recipe);
  for (const f of lessons) {
    const nb = (await api(f)).content;
    const untrusted = nb.cells.filter((c) => c.cell_type === 'code' && c.metadata.trusted !== true).length;
    assert.equal(untrusted, 0, `${f}: ${untrusted} code cells not trusted`);
  }
  const status = await page.$eval('[title^="Notebook"][title*="trusted"]', (e) => e.getAttribute('title'));
  assert.match(status, /^Notebook trusted/, status);
  // lesson 06, the one found "not trusted" when opened fresh: its status bar, as a learner opens it
  const other = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  try {
    await other.goto(`${base}/lab/workspaces/lesson06/tree/06_hopper_full_speed.ipynb?token=${TOKEN}&reset`);
    await other.waitForFunction(() => window.jupyterapp?.shell?.currentWidget?.context?.path
      === '06_hopper_full_speed.ipynb' && window.jupyterapp.shell.currentWidget.context.isReady, null, { timeout: 60000 });
    const item = other.locator('[title^="Notebook"][title*="trusted"]');
    await item.waitFor({ timeout: 30000 });
    assert.match(await item.getAttribute('title'), /^Notebook trusted: \d+ of \d+ code cells trusted/);
    await other.screenshot({ path: path.join(SHOTS, 'lesson06-trusted.png') });
  } finally {
    await other.close();
  }
});

test('lesson 05: a kernel listing, a diff, try_kernel with your value, a course error', { skip: SKIP }, async () => {
  for (const start of ['# Setup', 'import numpy as np\nimport helpers']) await runCell(await cellIndex(start));

  // a kernel listing: highlighted as C++ (CodeMirror's token classes inside the code block)
  const listing = await cellIndex('helpers.display.show_kernel(');
  await runCell(listing);
  // (the highlighter loads its C++ mode on first use: wait for it, up to 15 s)
  const count = (i) => window.jupyterapp.shell.currentWidget.content.widgets[i].node
    .querySelectorAll('.jp-OutputArea pre code span[class]').length;
  await page.waitForFunction(`(${count})(${listing}) > 20`, null, { timeout: 15000 }).catch(() => {});
  const tokens = await page.evaluate(`(${count})(${listing})`);
  assert.ok(tokens > 20, `the kernel listing has ${tokens} highlighted tokens`);
  await shot(listing, 'kernel-listing');

  // a rung's diff: added and removed lines coloured
  const diff = await cellIndex('helpers.display.rung_diff(2)');
  await runCell(diff);
  const d = await page.evaluate((i) => {
    const cell = window.jupyterapp.shell.currentWidget.content.widgets[i].node;
    const bg = (sel) => [...cell.querySelectorAll(sel)].map((e) => getComputedStyle(e).backgroundColor);
    const md = window.jupyterapp.shell.currentWidget.content.widgets[i].model.outputs.get(0).data['text/markdown'];
    return { add: bg('.course-diff-add'), del: bg('.course-diff-del'),
      lines: cell.querySelectorAll('pre.course-diff span[class^="course-diff-"]').length,
      emitted: md.split('<span class="course-diff-').length - 1,
      text: cell.querySelector('.jp-OutputArea').textContent };
  }, diff);
  assert.equal(d.lines, d.emitted, 'every line of the diff inside its block');
  assert.ok(d.add.length > 0 && d.del.length > 0, `added ${d.add.length}, removed ${d.del.length} lines marked`);
  assert.ok([...d.add, ...d.del].every((c) => c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent'), 'coloured');
  assert.notEqual(d.add[0], d.del[0], 'added and removed lines in different colours');
  assert.match(d.text, /(\d+) lines removed and (\d+) added against rung 1/);
  await shot(diff, 'rung-diff');

  // try_kernel with a learner's value (the CPU backend: the recorded sweep)
  const tk = await cellIndex('helpers.try_kernel(2, BK=64)');
  await runCell(tk);
  const t = await page.evaluate((i) => {
    const cell = window.jupyterapp.shell.currentWidget.content.widgets[i].node;
    return { text: cell.querySelector('.jp-OutputArea').textContent, imgs: cell.querySelectorAll('.jp-OutputArea img').length };
  }, tk);
  assert.match(t.text, /\nyours\s+\|\s+2\s+\|\s+BK\s+\|\s+64\s+\|/);
  assert.match(t.text, /\ndefault\s+\|\s+2\s+\|/);
  assert.match(t.text, /Your BK=64, as recorded: x\d\.\d{3} the default's speed \(spread x[\d.]+ to x[\d.]+\): /);
  assert.equal(t.imgs, 1, 'the bar chart');
  await shot(tk, 'try-kernel-your-value');

  // a course error, as a learner would make it: the message and the fix, no traceback frames
  const bad = await appendCell('helpers.try_kernel(3, PAD=4)');
  await runCell(bad);
  const e = await page.evaluate((i) => {
    const cell = window.jupyterapp.shell.currentWidget.content.widgets[i].node;
    return cell.querySelector('.jp-OutputArea').innerText;
  }, bad);
  assert.match(e, /PAD=4 is not a value rung 3/);
  assert.match(e, /\nFix: pass PAD= one of those integers/);
  assert.doesNotMatch(e, /Traceback|File "|-{3,}>|tryout\.py/, e);
  await shot(bad, 'course-error');
  ran.push(listing, diff, tk, bad);
});

test('no output line wraps inside a word at 1400 px', { skip: SKIP }, async () => {
  // the text outputs of the cells run above: a line the browser wraps breaks at a space, never inside a word
  assert.ok(ran.length > 0, 'the cells above ran');
  const broken = await page.evaluate((cells) => {
    const out = [];
    const nb = window.jupyterapp.shell.currentWidget.content;
    const pres = cells.flatMap((i) => [...nb.widgets[i].node.querySelectorAll('.jp-OutputArea-output pre')]);
    for (const pre of pres) {
      const text = pre.textContent;
      const range = document.createRange();
      const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
      let prevTop = null;
      let prevChar = '\n';
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        for (let k = 0; k < n.length; k++) {
          const ch = n.data[k];
          if (ch === '\n') { prevTop = null; prevChar = ch; continue; }
          range.setStart(n, k);
          range.setEnd(n, k + 1);
          const r = range.getClientRects()[0];
          if (!r) continue;
          if (prevTop !== null && r.top > prevTop + 2 && /\S/.test(ch) && /\S/.test(prevChar)) {
            out.push(text.slice(Math.max(0, text.indexOf(n.data) + k - 30), text.indexOf(n.data) + k + 10));
          }
          prevTop = r.top;
          prevChar = ch;
        }
      }
    }
    return out;
  }, ran);
  assert.deepEqual(broken, [], 'output lines wrapped inside a word');
});
