// bench.mjs -- what one before_model_resolve decision costs through the
// bridge, in the process OpenClaw would run it in, against the floor a
// plain-JS plugin would have (a Map lookup keyed by the session key).
//
//   node bench.mjs <staged plugin dir> <dirigent.so> <scratch dir>
//
// The bridge is registered with a fake OpenClaw api (as in unit.mjs); the
// real dirigent.so decides. A channel with two agents is woken by a human
// message; then, round by round and interleaved, each side answers the
// same two contexts: the speaker's (no result) and the non-speaker's (the
// no-reply override). Prints p50 and p99 per side and their ratio.
// Performance is judged here, never in a timed test.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [pluginDir, soPath, scratch] = process.argv.slice(2);
if (!pluginDir || !soPath || !scratch) {
  console.error('usage: node bench.mjs <plugin dir> <dirigent.so> <scratch dir>');
  process.exit(2);
}
fs.mkdirSync(scratch, { recursive: true });
const ROUNDS = Number(process.env.BENCH_ROUNDS || 200);
const PER_ROUND = 100;
const AIM_US = 3;

const hooks = [];
const api = {
  registrationMode: 'full',
  rootDir: pluginDir,
  pluginConfig: {
    noReplyProvider: 'noreply', noReplyModel: 'no-reply',
    dbPath: path.join(scratch, 'bench.db'),
    agents: { planner: { discordUserId: '100000000000000001' }, reviewer: { discordUserId: '100000000000000002' } },
    discord: { guildId: '900000000000000001', moderatorUserId: '100000000000000099' },
    turn: { timeoutSec: 86400 },
    bridge: { soPath, stateFile: path.join(scratch, 'sessions.jsonl') },
  },
  logger: { debug() {}, info() {}, warn: (m) => console.error(m), error: (m) => console.error(m) },
  registerTool() {},
  on(name, handler, opts) { hooks.push({ name, handler, priority: opts?.priority ?? 0 }); },
};
const mod = await import(pathToFileURL(path.join(pluginDir, 'index.mjs')).href);
mod.default.register(api);
const resolvers = hooks.filter((h) => h.name === 'before_model_resolve').sort((a, b) => b.priority - a.priority);
// OpenClaw's runner: handlers by priority, first defined value wins.
async function resolve(ev, ctx) {
  let out;
  for (const h of resolvers) {
    const r = await h.handler(ev, ctx);
    if (r && out === undefined) out = r;
  }
  return out;
}
const received = hooks.find((h) => h.name === 'message_received');

const CH = '200000000000000001';
const key = (a) => `agent:${a}:discord:channel:${CH}`;
const ctxOf = (a) => ({ agentId: a, sessionKey: key(a), sessionId: `sid-${a}`, workspaceDir: `/ws/${a}`,
  channelId: CH, messageProvider: 'discord', trigger: 'user', runId: undefined });
// Both agents seen in the channel, then a human message: planner speaks.
for (const [i, a] of ['planner', 'reviewer'].entries())
  await received.handler({ from: `discord:channel:${CH}`, content: `hello ${i}`, messageId: `30000000000000000${i}`,
    senderId: `10000000000000000${i + 1}`, sessionKey: key(a), metadata: { guildId: '1' } },
  { channelId: 'discord', accountId: a, conversationId: `channel:${CH}`, sessionKey: key(a) });
await received.handler({ from: `discord:channel:${CH}`, content: '<@100000000000000001> please start', messageId: '300000000000000009',
  senderId: '100000000000000050', sessionKey: key('planner'), metadata: { guildId: '1' } },
{ channelId: 'discord', accountId: 'planner', conversationId: `channel:${CH}`, sessionKey: key('planner') });

const speaker = ctxOf('planner');
const other = ctxOf('reviewer');
const ev = { prompt: 'What do you think of the API shape? Please keep it short.' };
const r1 = await resolve(ev, speaker);
const r2 = await resolve(ev, other);
if (r1 !== undefined || !r2 || r2.providerOverride !== 'noreply') {
  console.error(`bench: unexpected decisions: speaker ${JSON.stringify(r1)}, other ${JSON.stringify(r2)}`);
  process.exit(1);
}

// The floor: what a plugin written in JS would do for the same decision.
const plain = new Map([[key('reviewer'), { providerOverride: 'noreply', modelOverride: 'no-reply' }]]);
async function plainResolve(_ev, ctx) {
  return plain.get(ctx.sessionKey);
}

// Two figures. "repeat": the same run asks again (OpenClaw may call
// before_model_resolve more than once per run): a fresh context object with
// the same fields. "new run": every decision has a run id of its own, so
// the context differs from every earlier one (what a host sees on a
// run's first call). The prompt is the same short text throughout: passing
// a prompt costs in proportion to its length, not to the decision.
let runSeq = 0;
const sides = {
  repeat: (i) => ({ ...(i % 2 ? other : speaker) }),
  newRun: (i) => ({ ...(i % 2 ? other : speaker), runId: `run-${++runSeq}` }),
};
const times = { repeat: [], newRun: [], plain: [] };
const now = () => process.hrtime.bigint();
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 3 === 0 ? ['repeat', 'newRun', 'plain'] : round % 3 === 1 ? ['newRun', 'plain', 'repeat'] : ['plain', 'repeat', 'newRun'];
  for (const side of order) {
    for (let i = 0; i < PER_ROUND; i++) {
      const ctx = side === 'plain' ? { ...(i % 2 ? other : speaker) } : sides[side](i);
      const fn = side === 'plain' ? plainResolve : resolve;
      const t0 = now();
      await fn(ev, ctx);
      times[side].push(Number(now() - t0) / 1000);
    }
  }
}
const pct = (a, p) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const p50 = pct(times.plain, 0.5);
console.log('bench-bridge: before_model_resolve, one decision as OpenClaw runs it (p50 / p99, microseconds)');
for (const [side, label] of [['repeat', 'through the bridge, repeat call of a run'], ['newRun', 'through the bridge, first call of a run ']]) {
  const b50 = pct(times[side], 0.5);
  console.log(`bench-bridge:   ${label} ${b50.toFixed(2)} / ${pct(times[side], 0.99).toFixed(2)}  ratio ${(b50 / p50).toFixed(1)}x; aim <= ${AIM_US} us p50: ${b50 <= AIM_US ? 'met' : 'missed'}`);
}
console.log(`bench-bridge:   plain-JS Map lookup                      ${p50.toFixed(2)} / ${pct(times.plain, 0.99).toFixed(2)}`);
await hooks.find((h) => h.name === 'gateway_stop').handler({}, {});
process.exit(0);
