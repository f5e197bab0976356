// lib.mjs -- what the OpenClaw stages share: servers started as children
// that print their URL first, JSON over loopback HTTP, bounded waits, one
// PASS/FAIL line per check. Loopback only.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Everything a stage checks: {name, ok, detail}; printed as it happens.
export function makeChecks(tag) {
  const results = [];
  const check = (name, ok, detail = '') => {
    results.push({ name, ok: !!ok, detail });
    console.log(`${tag}: ${ok ? 'PASS' : 'FAIL'} ${name}${!ok && detail ? `\n    ${detail}` : ''}`);
    return !!ok;
  };
  const note = (msg) => console.log(`${tag}: ${msg}`);
  const summary = () => {
    const failed = results.filter((r) => !r.ok);
    console.log(`${tag}: ${results.length - failed.length}/${results.length} checks passed` +
      `${failed.length ? `; FAILED: ${failed.map((f) => f.name).join('; ')}` : ''}`);
    return failed.length;
  };
  return { results, check, note, summary };
}

// Children of the stage, killed on exit.
export function makeChildren(tag) {
  const children = [];
  let stopping = false;
  const cleanup = () => {
    stopping = true;
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  };
  process.on('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { cleanup(); process.exit(130); });
  const die = (msg) => {
    console.error(`${tag}: FAILED: ${msg}`);
    cleanup();
    process.exit(1);
  };
  // Start a server that prints its URL on its first stdout line.
  const startServer = (workDir, name, cmd, args, env = process.env) => {
    const errFile = path.join(workDir, `${name}.stderr`);
    const errFd = fs.openSync(errFile, 'w');
    const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', errFd], env });
    children.push(proc);
    return new Promise((resolve) => {
      const timer = setTimeout(() => die(`${name} printed no URL within 20 s (${errFile})`), 20_000);
      proc.on('exit', (code) => {
        clearTimeout(timer);
        die(`${name} exited (${code}) before printing its URL: ${fs.readFileSync(errFile, 'utf8').slice(0, 2000)}`);
      });
      readline.createInterface({ input: proc.stdout }).once('line', (line) => {
        clearTimeout(timer);
        proc.removeAllListeners('exit');
        proc.on('exit', (code, sig) => { if (!stopping) console.log(`${tag}: ${name} exited unexpectedly (${code ?? sig})`); });
        resolve({ proc, url: line.trim(), errFile });
      });
    });
  };
  return { children, cleanup, die, startServer, isStopping: () => stopping };
}

export async function getJson(url, init) {
  const r = await fetch(url, init);
  const text = await r.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${url}: not JSON (${r.status}): ${text.slice(0, 200)}`);
  }
}

export const postJson = (url, body) => getJson(url, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
});

// Polls fn until it returns a truthy value or ms pass; returns the last value.
export async function waitFor(fn, ms, step = 200) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > end) return v;
    await sleep(step);
  }
}

// No update checks, statistics, helper downloads or mDNS: only loopback.
export const offlineEnv = {
  OPENCLAW_NO_AUTO_UPDATE: '1', OPENCLAW_OFFLINE: '1', OPENCLAW_DISABLE_BONJOUR: '1',
  DO_NOT_TRACK: '1', CI: '1', NO_COLOR: '1', FORCE_COLOR: '0',
};

export function modelEntry(id) {
  return { id, name: id, reasoning: false, input: ['text'], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128000, maxTokens: 4096 };
}

export function writeConfig(home, cfg) {
  fs.mkdirSync(path.join(home, '.openclaw'), { recursive: true });
  fs.writeFileSync(path.join(home, '.openclaw', 'openclaw.json'), `${JSON.stringify(cfg, null, 2)}\n`);
}

// Reads the bridge's session journal into {sessionKey: latest record}.
export function readJournal(file) {
  const out = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    try {
      const r = JSON.parse(line);
      out[r.k] = r.s;
    } catch { /* a torn last line */ }
  }
  return out;
}
