// status_page.mjs -- make check-browser's browser half: the status page of
// `dirigent-ctl serve` in a real headless Chromium, driven over the Chrome
// DevTools Protocol on a pipe (--remote-debugging-pipe: no websocket, no
// npm package). Node 18+ only.
//
//   node tests/browser/status_page.mjs --url URL --scope TEXT --discussion TEXT
//        [--ready-file FILE --ready TEXT] [--poke CMD --after TEXT]
//        [--redrawn-shows 'TEXT|TEXT...'] [--chromium /usr/bin/chromium]
//        [--timeout-sec 120]
//
// Asserts: the page loads with no console error, page exception, failed
// request or HTTP error; it shows TEXT of --scope and --discussion; when
// FILE holds the --ready line (the story is over), CMD (a shell command that
// makes the story go on, e.g. posts a message) is run and the page, without
// being reloaded, redraws until it shows --after, and then shows each TEXT
// of --redrawn-shows (what the script draws, e.g. the cost). Every wait is for a
// condition, bounded by --timeout-sec. Exit 0 when all hold, 1 otherwise.
import { spawn, execSync } from 'node:child_process';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  args[k] = process.argv[i + 1];
}
const need = ['url', 'scope', 'discussion'];
for (const k of need)
  if (!args[k]) {
    console.error(`status_page: --${k} is required`);
    process.exit(2);
  }
const TIMEOUT = Number(args['timeout-sec'] || 120) * 1000;
const chromium = args.chromium || '/usr/bin/chromium';

const profile = mkdtempSync(join(tmpdir(), 'dirigent-browser-'));
const proc = spawn(chromium, [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--remote-debugging-pipe',
  `--user-data-dir=${profile}`, '--no-first-run', '--no-default-browser-check',
  '--disable-extensions', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--disable-default-apps', '--mute-audio', 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let chromeErr = '';
proc.stderr.on('data', (d) => { chromeErr += d; });

const errors = [];
let nextId = 1;
const pending = new Map();
let inbuf = Buffer.alloc(0);
proc.stdio[4].on('data', (chunk) => {
  inbuf = Buffer.concat([inbuf, chunk]);
  let z;
  while ((z = inbuf.indexOf(0)) >= 0) {
    const msg = JSON.parse(inbuf.subarray(0, z).toString('utf8'));
    inbuf = inbuf.subarray(z + 1);
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(`${msg.error.message} (${msg.error.code})`));
      else resolve(msg.result);
    } else if (msg.method) {
      onEvent(msg.method, msg.params || {});
    }
  }
});

function send(method, params = {}, sessionId) {
  const id = nextId++;
  const msg = { id, method, params };
  if (sessionId) msg.sessionId = sessionId;
  proc.stdio[3].write(JSON.stringify(msg) + '\0');
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    setTimeout(() => {
      if (pending.delete(id)) reject(new Error(`${method}: no answer from Chromium`));
    }, 30000);
  });
}

function onEvent(method, p) {
  if (method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'assert'))
    errors.push(`console.${p.type}: ${(p.args || []).map((a) => a.value ?? a.description).join(' ')}`);
  else if (method === 'Runtime.exceptionThrown')
    errors.push(`page exception: ${p.exceptionDetails?.exception?.description || p.exceptionDetails?.text}`);
  else if (method === 'Log.entryAdded' && p.entry.level === 'error')
    errors.push(`console (${p.entry.source}): ${p.entry.text} ${p.entry.url || ''}`);
  else if (method === 'Network.loadingFailed' && !p.canceled)
    errors.push(`request failed: ${p.errorText} (${p.type})`);
  else if (method === 'Network.responseReceived' && p.response.status >= 400)
    errors.push(`HTTP ${p.response.status} for ${p.response.url}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn) {
  const end = Date.now() + TIMEOUT;
  for (;;) {
    if (errors.length) throw new Error(`an error in the browser while waiting for ${what}`);
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${TIMEOUT / 1000} s waiting for ${what}`);
    await sleep(250);
  }
}

let session;
async function evaluate(expr) {
  const r = await send('Runtime.evaluate', { expression: expr, returnByValue: true }, session);
  if (r.exceptionDetails) throw new Error(`evaluate ${expr}: ${r.exceptionDetails.text}`);
  return r.result.value;
}
const mainText = () => evaluate("(document.getElementById('main')||{innerText:''}).innerText");

let failed = null;
try {
  const { targetInfos } = await send('Target.getTargets');
  const page = targetInfos.find((t) => t.type === 'page');
  if (!page) throw new Error('Chromium opened no page');
  ({ sessionId: session } = await send('Target.attachToTarget', { targetId: page.targetId, flatten: true }));
  for (const d of ['Runtime', 'Log', 'Page', 'Network']) await send(`${d}.enable`, {}, session);
  await send('Page.navigate', { url: args.url }, session);
  await until('the page to load', async () => (await evaluate('document.readyState')) === 'complete' &&
    (await evaluate('document.title')) === 'Dirigent status');
  // Reloading would clear this: its survival shows the script redrew in place.
  await evaluate('window.__dirigentProbe = 1');
  const first = await mainText();
  console.log(`status_page: loaded ${args.url}; first view: ${first.slice(0, 120).replace(/\s+/g, ' ')}...`);
  await until(`the scope ${args.scope} and the discussion ${args.discussion}`, async () => {
    const t = await mainText();
    return t.includes(args.scope) && t.includes(args.discussion);
  });
  console.log(`status_page: shows ${args.scope} and ${args.discussion}` +
    (first.includes(args.discussion) ? '' : ' (redrawn in place while the story ran)'));
  const chartOk = await evaluate("(() => { const i = document.getElementById('chart'); return i.complete && i.naturalWidth > 0; })()");
  if (!chartOk) throw new Error('the chart (chart.svg) did not load as an image');
  if (args.poke) {
    if (args['ready-file'])
      await until(`"${args.ready}" in ${args['ready-file']}`, async () =>
        readFileSync(args['ready-file'], 'utf8').includes(args.ready));
    const before = await mainText();
    const refreshes = Number(await evaluate("document.body.getAttribute('data-refreshes')||0"));
    execSync(args.poke, { stdio: 'inherit', shell: '/bin/sh' });
    console.log(`status_page: ran ${args.poke}`);
    await until(`the page to show "${args.after}" without a reload`, async () => {
      const t = await mainText();
      return t !== before && t.includes(args.after);
    });
    if ((await evaluate('window.__dirigentProbe')) !== 1) throw new Error('the page was reloaded, not redrawn');
    const now = Number(await evaluate("document.body.getAttribute('data-refreshes')||0"));
    if (!(now > refreshes)) throw new Error(`no redraw counted (${refreshes} -> ${now})`);
    console.log(`status_page: redrawn in place (${refreshes} -> ${now} refreshes) and shows "${args.after}"`);
    const t = await mainText();
    for (const want of (args['redrawn-shows'] || '').split('|').filter(Boolean))
      if (!t.includes(want)) throw new Error(`the redrawn page lacks "${want}"`);
    if (args['redrawn-shows']) console.log(`status_page: the redrawn page shows ${args['redrawn-shows']}`);
  }
  // One more refresh cycle, so an error thrown by a late redraw is seen.
  const r0 = Number(await evaluate("document.body.getAttribute('data-refreshes')||0"));
  await until('one more refresh', async () =>
    Number(await evaluate("document.body.getAttribute('data-refreshes')||0")) > r0);
} catch (e) {
  failed = e.message;
}
if (errors.length) failed = (failed ? failed + '; ' : '') + `errors in the browser:\n  ${errors.join('\n  ')}`;
try { await send('Browser.close'); } catch { /* it may be gone */ }
const exited = new Promise((r) => proc.once('exit', r));
proc.kill('SIGKILL');
await Promise.race([exited, sleep(10000)]);
try { rmSync(profile, { recursive: true, force: true, maxRetries: 5 }); } catch { /* a temp folder */ }
if (failed) {
  console.error(`status_page: FAILED: ${failed}`);
  if (chromeErr.trim()) console.error(`chromium said:\n${chromeErr.trim().slice(-2000)}`);
  process.exit(1);
}
console.log('status_page: OK: no console error, no page exception, no failed request');
process.exit(0);
