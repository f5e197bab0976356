// lib.mjs -- what the OpenClaw stages share: servers started as children
// that print their URL first, JSON over loopback HTTP, bounded waits, one
// PASS/FAIL line per check. Loopback only.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { DatabaseSync } from 'node:sqlite';

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

// A free loopback port (for the gateway's --port).
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Which inbound message a real-model call (a model.mjs record) answered:
// OpenClaw names it (message_id: a Discord snowflake, a Slack ts) in the
// internal context of the request. speakersByMessage returns {byMessage: Map(message id -> agents in call order),
// interleaved: [[id, agents]...]}: agents take turns on a message (the
// speaker runs; only when it passes does the next agent get the turn, and
// runs on the same message), so a non-speaker running at the same time
// shows as agents interleaving on one message.
export function messageIdOf(q) {
  const msgs = q.raw && Array.isArray(q.raw.messages) ? q.raw.messages : [];
  const text = JSON.stringify(msgs);
  // The turn's "Conversation info" block (its last one; OpenClaw quotes it
  // inside a JSON string of its internal context, so quotes may come
  // escaped): the message answered. Blocks after it (the thread starter,
  // history) name older messages.
  const info = [...text.matchAll(/Conversation info[^`]*```json[^`]*?message_id\\*"\s*:\s*\\*"(\d+(?:\.\d+)?)/g)];
  if (info.length) return info[info.length - 1][1];
  const ids = [...text.matchAll(/message_id\\*":\\*"(\d+(?:\.\d+)?)/g)].map((m) => m[1]);
  return ids[ids.length - 1];
}

export function speakersByMessage(reqs) {
  const byMessage = new Map();
  for (const q of [...reqs].sort((x, y) => x.at - y.at || x.seq - y.seq)) {
    const id = messageIdOf(q);
    if (!id) continue;
    if (!byMessage.has(id)) byMessage.set(id, []);
    byMessage.get(id).push(q.model.replace(/-model$/, ''));
  }
  const interleaved = [...byMessage].filter(([, agents]) => {
    const blocks = agents.filter((a, i) => i === 0 || agents[i - 1] !== a);
    return new Set(blocks).size !== blocks.length;
  });
  return { byMessage, interleaved };
}

// Dirigent's cost ledger (dbFile: its SQLite store) against what the
// scripted model saw (reqs): OpenClaw reported every model call
// (model_call_ended) and its tokens (llm_output), each call belongs to a run
// Dirigent let through, none to a claimed one. OpenClaw's own text-only
// continuation after a run that ended in tool calls
// ("settled-tool-finalization") reaches the model without a
// model_call_ended when its harness runs it in isolation, so per agent: every
// call the model saw but the continuations, and at most all of them.
// Returns {ok, detail, claimed}.
// `openclaw <args>` as an operator runs it (cwd home, env the stage's), its
// output appended to logFile; resolves to { code, text } (stdout and stderr),
// killed after 4 minutes. The child joins children (cleanup).
export function makeOpenclawCli({ node, openclaw, home, env, children, logFile }) {
  return (args, extraEnv = {}) => new Promise((resolve) => {
    const out = [];
    const child = spawn(node, [openclaw, ...args], { cwd: home, stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, ...extraEnv } });
    children.push(child);
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => out.push(b));
    const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const text = Buffer.concat(out).toString('utf8');
      fs.appendFileSync(logFile, `$ openclaw ${args.join(' ')}\n${text}\n`);
      resolve({ code, text });
    });
  });
}

export function costLedger(dbFile, reqs) {
  let rows = null, err = '';
  try {
    const d = new DatabaseSync(dbFile, { readOnly: true });
    rows = d.prepare('SELECT agent_id, verdict, model_calls, tokens_in, tokens_out FROM cost_runs').all();
    d.close();
  } catch (e) { err = e.message; }
  const sum = (f) => (rows ?? []).reduce((n, r) => n + f(r), 0);
  const calls = sum((r) => r.model_calls);
  const offTurn = sum((r) => (r.verdict === 1 ? 0 : r.model_calls));
  const claimed = (rows ?? []).filter((r) => r.verdict === 3).length;
  // The request's last user message is that continuation prompt; its words
  // also turn up inside later requests' quoted history, so only the ending counts.
  const continuation = (q) => /text-only pass, so reply with plain text and do not attempt any tool call\.\s*$/
    .test(q.lastUser ?? '');
  const unreported = reqs.filter(continuation).length;
  const perAgent = {};
  for (const q of reqs) {
    const a = q.model.replace(/-model$/, '');
    perAgent[a] ??= { model: 0, continuations: 0, ledger: 0 };
    perAgent[a].model += 1;
    if (continuation(q)) perAgent[a].continuations += 1;
  }
  for (const r of rows ?? []) {
    perAgent[r.agent_id] ??= { model: 0, continuations: 0, ledger: 0 };
    perAgent[r.agent_id].ledger += r.model_calls;
  }
  const agentsAgree = Object.values(perAgent).every((a) => a.ledger >= a.model - a.continuations && a.ledger <= a.model);
  return {
    ok: !!rows && agentsAgree && offTurn === 0 && claimed > 0 && sum((r) => r.tokens_in + r.tokens_out) > 0,
    claimed,
    detail: err || `ledger calls ${calls} (model saw ${reqs.length}, ${unreported} of them OpenClaw's continuations, which it may leave unreported), ` +
      `calls on runs not let through ${offTurn}, claimed runs ${claimed}, tokens ${sum((r) => r.tokens_in)}/${sum((r) => r.tokens_out)}; ` +
      `per agent (model calls / continuations / ledger): ${JSON.stringify(perAgent)}`,
  };
}
