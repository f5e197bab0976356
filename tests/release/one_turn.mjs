// one_turn.mjs -- make check-install's turn: the Dirigent that
// `openclaw plugins install` put into an OpenClaw home, loaded through its
// own bridge (index.mjs, bundled koffi) with a fake OpenClaw api, decides
// one turn with its prebuilt dirigent.so: two agents seen in a channel, a
// human names the planner, and before_model_resolve must leave the planner
// alone and route the reviewer to the no-reply model. Also checks that the
// bridge and dirigent.so share the jansson the package carries.
//
//   node one_turn.mjs <installed plugin dir> <scratch dir>
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [pluginDir, scratch] = process.argv.slice(2);
if (!pluginDir || !scratch) {
  console.error('usage: node one_turn.mjs <installed plugin dir> <scratch dir>');
  process.exit(2);
}
const fail = (m) => { console.error(`one-turn: FAILED: ${m}`); process.exit(1); };
fs.mkdirSync(scratch, { recursive: true });

const hooks = [];
const api = {
  registrationMode: 'full',
  rootDir: pluginDir,
  pluginConfig: {
    noReplyProvider: 'noreply', noReplyModel: 'no-reply',
    dbPath: path.join(scratch, 'one-turn.db'),
    agents: { planner: { discordUserId: '100000000000000001' }, reviewer: { discordUserId: '100000000000000002' } },
    discord: { guildId: '900000000000000001', moderatorUserId: '100000000000000099' },
    turn: { timeoutSec: 86400 },
    // No soPath: the bridge finds the package's own dirigent.so.
    bridge: { stateFile: path.join(scratch, 'sessions.jsonl') },
  },
  logger: { debug() {}, info() {}, warn: (m) => console.error(m), error: (m) => console.error(m) },
  registerTool() {},
  on(name, handler, opts) { hooks.push({ name, handler, priority: opts?.priority ?? 0 }); },
};
const mod = await import(pathToFileURL(path.join(pluginDir, 'index.mjs')).href);
mod.default.register(api);
const resolvers = hooks.filter((h) => h.name === 'before_model_resolve').sort((a, b) => b.priority - a.priority);
const received = hooks.find((h) => h.name === 'message_received');
if (!resolvers.length || !received) fail(`the bridge registered no before_model_resolve / message_received (hooks: ${hooks.map((h) => h.name).join(', ')})`);
async function resolve(ev, ctx) {
  let out;
  for (const h of resolvers) {
    const r = await h.handler(ev, ctx);
    if (r && out === undefined) out = r;
  }
  return out;
}

const CH = '200000000000000001';
const key = (a) => `agent:${a}:discord:channel:${CH}`;
const ctxOf = (a) => ({ agentId: a, sessionKey: key(a), sessionId: `sid-${a}`, workspaceDir: `/ws/${a}`,
  channelId: CH, messageProvider: 'discord', trigger: 'user', runId: undefined });
for (const [i, a] of ['planner', 'reviewer'].entries())
  await received.handler({ from: `discord:channel:${CH}`, content: `hello ${i}`, messageId: `30000000000000000${i}`,
    senderId: `10000000000000000${i + 1}`, sessionKey: key(a), metadata: { guildId: '1' } },
  { channelId: 'discord', accountId: a, conversationId: `channel:${CH}`, sessionKey: key(a) });
await received.handler({ from: `discord:channel:${CH}`, content: '<@100000000000000001> please start', messageId: '300000000000000009',
  senderId: '100000000000000050', sessionKey: key('planner'), metadata: { guildId: '1' } },
{ channelId: 'discord', accountId: 'planner', conversationId: `channel:${CH}`, sessionKey: key('planner') });

const ev = { prompt: 'What do you think of the API shape?' };
const planner = await resolve(ev, ctxOf('planner'));
const reviewer = await resolve(ev, ctxOf('reviewer'));
if (planner !== undefined || reviewer?.providerOverride !== 'noreply' || reviewer?.modelOverride !== 'no-reply')
  fail(`the planner (named) should speak and the reviewer get the no-reply model; got planner ${JSON.stringify(planner)}, reviewer ${JSON.stringify(reviewer)}`);

// One jansson in the process, the package's.
const maps = fs.readFileSync('/proc/self/maps', 'utf8').split('\n');
const jansson = [...new Set(maps.filter((l) => l.includes('libjansson')).map((l) => l.split(/\s+/).pop()))];
const so = [...new Set(maps.filter((l) => l.endsWith('/dirigent.so')).map((l) => l.split(/\s+/).pop()))];
if (jansson.length !== 1 || path.dirname(jansson[0]) !== path.dirname(so[0] ?? ''))
  fail(`expected one libjansson.so.4, beside ${so[0]}; mapped: ${jansson.join(', ') || 'none'}`);

await hooks.find((h) => h.name === 'gateway_stop')?.handler({}, {});
console.log(`one-turn: OK: ${so[0]} (jansson ${jansson[0]}) decided the turn: planner speaks, reviewer no-reply`);
process.exit(0);
