// unit.mjs -- the bridge against a fake OpenClaw `api` and the fixture
// plugin tests/plugins/bridge_probe.c: JSON both ways, context renaming,
// hook results, tool errors, agent_end translation and de-duplication,
// persistent sessions, shutdown/restart, and host calls from the plugin's
// own threads while many calls are in flight (no deadlock, no crash).
//
//   node unit.mjs <staged plugin dir> <bridge_probe.so> <scratch dir>
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [pluginDir, probeSo, scratch] = process.argv.slice(2);
if (!pluginDir || !probeSo || !scratch) {
  console.error('usage: node unit.mjs <plugin dir> <bridge_probe.so> <scratch dir>');
  process.exit(2);
}
// A deadlock would leave the event loop idle with work pending: fail loudly.
const watchdog = setTimeout(() => {
  console.error('unit: FAILED: no progress for 90 s (deadlock between the bridge and the plugin?)');
  process.exit(3);
}, 90_000);

const stateFile = path.join(scratch, 'sessions.jsonl');
// The session journal as {key: latest record}: the last line of a key wins.
function journal(file) {
  const out = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) if (line) { const r = JSON.parse(line); out[r.k] = r.s; }
  return out;
}
const logs = [];
const tools = new Map();
const hooks = [];
function fakeApi(pluginConfig, registrationMode = 'full') {
  const rec = (level) => (m) => logs.push({ level, m });
  return {
    registrationMode,
    pluginConfig,
    rootDir: pluginDir,
    logger: { debug: rec('debug'), info: rec('info'), warn: rec('warn'), error: rec('error') },
    registerTool(factory, opts) {
      assert.equal(typeof factory, 'function', 'registerTool gets a factory');
      tools.set(opts.name, factory);
    },
    on(name, handler, opts) {
      hooks.push({ name, handler, priority: opts?.priority ?? 0, order: hooks.length });
    },
  };
}
// Like OpenClaw's runner: handlers of one hook by priority, first defined
// value of each field wins for the modify hooks.
async function runModify(name, event, ctx) {
  const hs = hooks.filter((h) => h.name === name).sort((a, b) => b.priority - a.priority || a.order - b.order);
  const merged = {};
  for (const h of hs) {
    const r = await h.handler(event, ctx);
    if (r && typeof r === 'object') for (const [k, v] of Object.entries(r)) if (merged[k] === undefined) merged[k] = v;
  }
  return Object.keys(merged).length ? merged : undefined;
}
async function runObserve(name, event, ctx) {
  await Promise.all(hooks.filter((h) => h.name === name).map((h) => h.handler(event, ctx)));
}
function tool(name, ctx) {
  const f = tools.get(name);
  assert.ok(f, `tool ${name} registered`);
  return f(ctx);
}
async function stats(ctx = { agentId: 'probe', sessionKey: 'agent:probe:discord:channel:42' }) {
  return (await tool('probe_stats', ctx).execute('s', {})).details;
}
let passed = 0;
async function step(name, fn) {
  await fn();
  passed += 1;
  console.log(`unit: ok - ${name}`);
}

const mod = await import(pathToFileURL(path.join(pluginDir, 'index.mjs')).href);
const bridge = mod.default;
const g = mod._internals.g;
const base = { threads: 2, tickMs: 1, bridge: { soPath: probeSo, stateFile, settleMs: 0 } };

await step('setup-only and cli-metadata registrations start nothing', async () => {
  bridge.register(fakeApi(base, 'setup-only'));
  bridge.register(fakeApi(base, 'cli-metadata'));
  assert.equal(g.instance, null);
  assert.equal(tools.size, 0);
  assert.equal(hooks.length, 0);
});

await step('a .so that cannot load names the missing library and its package, or the architecture', async () => {
  // A copy of the probe whose NEEDED libjansson.so.4 became libjansson.so.9
  // (same length): dlopen fails on that library, as on a machine without it.
  const bytes = fs.readFileSync(probeSo);
  const from = Buffer.from('libjansson.so.4\0');
  assert.ok(bytes.indexOf(from) >= 0, 'the probe links libjansson.so.4');
  let at;
  while ((at = bytes.indexOf(from)) >= 0) bytes.write('libjansson.so.9\0', at, 'latin1');
  const missing = path.join(scratch, 'needs-missing.so');
  fs.writeFileSync(missing, bytes);
  assert.throws(() => bridge.register(fakeApi({ ...base, bridge: { ...base.bridge, soPath: missing } })),
    (e) => e.message.startsWith(`${missing} needs libjansson.so.9, which is not installed`));
  assert.equal(g.native, null);
  // The same probe marked as an arm64 (aarch64) build.
  const arm = Buffer.from(fs.readFileSync(probeSo));
  arm.writeUInt16LE(process.arch === 'arm64' ? 62 : 183, 18);
  const armSo = path.join(scratch, 'other-arch.so');
  fs.writeFileSync(armSo, arm);
  assert.throws(() => bridge.register(fakeApi({ ...base, bridge: { ...base.bridge, soPath: armSo } })),
    new RegExp(`^Error: ${armSo} is built for (arm64|x64) \\(64-bit\\) but this Node runs on ${process.arch}: build dirigent.so on this machine`));
  assert.equal(g.native, null);
  // Each runtime library of dirigent.so with its Debian/Ubuntu package.
  const explain = mod._internals.explainLoadError;
  for (const [lib, pkg] of [['libjansson.so.4', 'libjansson4'], ['libsqlite3.so.0', 'libsqlite3-0'], ['libpq.so.5', 'libpq5'], ['libcurl.so.4', 'libcurl4']]) {
    const e = explain('/nowhere/dirigent.so', new Error(`Failed to load shared library: ${lib}: cannot open shared object file: No such file or directory`));
    assert.match(e.message, new RegExp(`^/nowhere/dirigent.so needs ${lib.replaceAll('.', '\\.')}, which is not installed: install the package ${pkg}[ (]`));
    assert.match(e.message, new RegExp(`apt-get install ${pkg}\\)`));
  }
  assert.match(explain('libjansson.so.4', new Error('libjansson.so.4: cannot open shared object file: No such file or directory')).message,
    /^the bridge needs libjansson\.so\.4, which is not installed: install the package libjansson4/);
});

await step('an init error names the key and registers nothing', async () => {
  assert.throws(() => bridge.register(fakeApi({ ...base, zzz: 1 })), /refused to start \(OC_ERR_INVALID\).*"zzz"/);
  assert.equal(tools.size, 0);
  assert.equal(hooks.length, 0);
});

await step('register: tools and hooks with priorities; bridge keys never reach init', async () => {
  bridge.register(fakeApi(base, 'discovery'));
  assert.deepEqual([...tools.keys()].sort(), ['probe_decide', 'probe_echo', 'probe_fail', 'probe_host', 'probe_stats']);
  const names = hooks.map((h) => `${h.name}@${h.priority}`).sort();
  for (const want of ['before_model_resolve@1000000', 'before_dispatch@1000000', 'before_model_resolve@10', 'before_prompt_build@0',
    'message_sending@0', 'agent_end@0', 'message_received@0', 'gateway_start@0', 'gateway_stop@0'])
    assert.ok(names.includes(want), `hook ${want} registered (have ${names.join(', ')})`);
  assert.ok(logs.some((l) => /bridge_probe: started/.test(l.m)), 'init logged through api.logger');
});

const threadCtx = {
  agentId: 'planner', sessionKey: 'agent:planner:discord:channel:111:thread:222', sessionId: 'sid-1',
  workspaceDir: '/ws/planner', agentDir: '/agents/planner', senderIsOwner: true,
  deliveryContext: { channel: 'discord', to: 'channel:222', accountId: 'acc-1' }, oneShotCliRun: false,
};

await step('tool: params and context cross both ways unchanged / renamed', async () => {
  const params = { text: 'héllo "quoted" \\ \n\t ünïcode 🎵 <@123>', n: 1.5, big: 12345678901, neg: -7,
    flag: false, nothing: null, nested: { a: [1, null, true, 'x'], empty: {} } };
  const r = await tool('probe_echo', threadCtx).execute('call-1', params);
  assert.equal(r.content.length, 1);
  assert.deepEqual(JSON.parse(r.content[0].text), r.details);
  assert.deepEqual(r.details.params, params);
  assert.deepEqual(r.details.ctx, {
    agentId: 'planner', sessionKey: threadCtx.sessionKey, sessionId: 'sid-1', workspaceDir: '/ws/planner',
    channelId: '111', threadId: '222', accountId: 'acc-1', senderIsOwner: true, toolCallId: 'call-1',
  });
});

await step('tool: an error status becomes a thrown error the agent can read', async () => {
  await assert.rejects(tool('probe_fail', threadCtx).execute('call-2', {}),
    /^Error: OC_ERR_DENIED: probe_fail always refuses; call probe_echo instead$/);
});

await step('before_model_resolve: context renamed, override merged, no override otherwise', async () => {
  const octx = { runId: 'r0', agentId: 'planner', sessionKey: threadCtx.sessionKey, sessionId: 'sid-1',
    workspaceDir: '/ws/planner', modelProviderId: 'script', modelId: 'm', trigger: 'user', channelId: '111:thread:222' };
  assert.deepEqual(await runModify('before_model_resolve', { prompt: 'keep silence please' }, octx),
    { providerOverride: 'np', modelOverride: 'nm' });
  assert.equal(await runModify('before_model_resolve', { prompt: 'talk' }, octx), undefined);
  const seen = (await stats()).seen.before_model_resolve;
  assert.deepEqual(seen.event, { prompt: 'talk' });
  assert.equal(seen.calls, 2);
  assert.deepEqual(seen.ctx, { agentId: 'planner', sessionKey: threadCtx.sessionKey, sessionId: 'sid-1',
    workspaceDir: '/ws/planner', channelId: '111', threadId: '222', runId: 'r0', messageProvider: 'discord' });
});

await step('before_prompt_build and message_sending results', async () => {
  const octx = { agentId: 'planner', sessionKey: 'agent:planner:discord:channel:111' };
  assert.deepEqual(await runModify('before_prompt_build', { prompt: 'p', messages: [] }, octx),
    { appendSystemContext: 'probe-context' });
  const mctx = { channelId: 'discord', accountId: 'a1', conversationId: 'channel:111',
    sessionKey: 'agent:planner:discord:channel:111' };
  assert.deepEqual(await runModify('message_sending', { to: 'channel:111', content: 'this is forbidden' }, mctx),
    { cancel: true, cancelReason: 'probe' });
  assert.equal(await runModify('message_sending', { to: 'channel:111', content: 'fine' }, mctx), undefined);
  const seen = (await stats()).seen.message_sending;
  assert.deepEqual(seen.event, { to: 'channel:111', content: 'fine' });
  assert.deepEqual(seen.ctx, { agentId: 'planner', sessionKey: 'agent:planner:discord:channel:111',
    channelId: '111', accountId: 'a1', messageProvider: 'discord' });
  // OpenClaw's own notices reach the plugin marked isError.
  const notice = "⚠️ OpenClaw couldn't produce or deliver a reply. Please try again. Reference: r1.";
  await runModify('message_sending', { to: 'channel:111', content: notice }, mctx);
  assert.deepEqual((await stats()).seen.message_sending.event, { to: 'channel:111', content: notice, isError: true });
  assert.equal(mod._internals.isHostNotice('⚠️ careful: this API is deprecated'), false);
});

await step('another chat platform\'s traffic (Telegram) never reaches the plugin; Slack\'s does', async () => {
  const fp = mod._internals.foreignProvider;
  assert.equal(fp({}, { messageProvider: 'telegram', sessionKey: 'agent:planner:telegram:direct:42' }), 'telegram');
  assert.equal(fp({ sessionKey: 'agent:planner:telegram:direct:42' }, {}), 'telegram');
  assert.equal(fp({}, { channelId: 'whatsapp', conversationId: '+4912345' }), 'whatsapp');
  assert.equal(fp({}, { messageProvider: 'slack', sessionKey: 'agent:planner:slack:channel:c0work0001' }), null);
  assert.equal(fp({}, { sessionKey: 'agent:planner:slack:channel:c0work0001:thread:1700000000.000100' }), null);
  assert.equal(fp({}, { channelId: 'slack', conversationId: 'channel:C0WORK0001', accountId: 'planner' }), null);
  // A Slack channel id where OpenClaw puts one is no provider name.
  assert.equal(fp({}, { channelId: 'C0WORK0001' }), null);
  assert.equal(fp({}, { messageProvider: 'discord', sessionKey: 'agent:planner:discord:channel:111' }), null);
  assert.equal(fp({}, { channelId: 'discord', conversationId: 'channel:111' }), null);
  assert.equal(fp({}, { channelId: '111' }), null);
  assert.equal(fp({}, {}), null);
  const before = (await stats()).seen.message_sending;
  assert.equal(await runModify('message_sending', { to: '42', content: 'from telegram' },
    { channelId: 'telegram', accountId: 'planner', conversationId: '42',
      sessionKey: 'agent:planner:telegram:direct:42' }), undefined);
  assert.deepEqual((await stats()).seen.message_sending, before);
  // Slack's delivery reaches the plugin, renamed like Discord's.
  assert.deepEqual(await runModify('message_sending', { to: 'channel:C0WORK0001', content: 'this is forbidden', threadId: '1700000000.000100' },
    { channelId: 'slack', accountId: 'planner', conversationId: 'channel:C0WORK0001',
      sessionKey: 'agent:planner:slack:channel:c0work0001:thread:1700000000.000100' }), { cancel: true, cancelReason: 'probe' });
  const seen = (await stats()).seen.message_sending;
  assert.deepEqual(seen.event, { to: 'channel:C0WORK0001', content: 'this is forbidden', threadId: '1700000000.000100' });
  assert.deepEqual(seen.ctx, { agentId: 'planner', sessionKey: 'agent:planner:slack:channel:c0work0001:thread:1700000000.000100',
    channelId: 'C0WORK0001', threadId: '1700000000.000100', accountId: 'planner', messageProvider: 'slack' });
});

await step('Slack: session keys with lower-cased ids, channel strings, agent and tool contexts', async () => {
  const { parseSessionKey, channelFrom, agentCtx, toolCtx } = mod._internals;
  assert.deepEqual(parseSessionKey('agent:planner:slack:channel:c0work0001'),
    { agentId: 'planner', provider: 'slack', channelId: 'C0WORK0001', threadId: undefined, isDm: false });
  assert.deepEqual(parseSessionKey('agent:reviewer:slack:channel:g0priv0002:thread:1712345678.123456'),
    { agentId: 'reviewer', provider: 'slack', channelId: 'G0PRIV0002', threadId: '1712345678.123456', isDm: false });
  assert.deepEqual(parseSessionKey('agent:coder:slack:direct:u0alice001'),
    { agentId: 'coder', provider: 'slack', peerId: 'U0ALICE001', isDm: true });
  // Discord keys keep their ids as they are.
  assert.deepEqual(parseSessionKey('agent:planner:discord:channel:111:thread:222'),
    { agentId: 'planner', provider: 'discord', channelId: '111', threadId: '222', isDm: false });
  assert.equal(parseSessionKey('agent:planner:telegram:channel:42'), null);
  assert.equal(channelFrom('channel:C0WORK0001'), 'C0WORK0001');
  assert.equal(channelFrom('c0work0001:thread:1712345678.123456'), 'C0WORK0001');
  assert.equal(channelFrom('C0WORK0001'), 'C0WORK0001');
  assert.equal(channelFrom('channel:123'), '123');
  for (const name of ['discord', 'direct', 'slack', 'channel:general', 'C0']) assert.equal(channelFrom(name), undefined, name);
  // Agent hooks of a Slack thread session: OpenClaw's channelId is "<c>:thread:<ts>".
  assert.deepEqual(agentCtx({ agentId: 'reviewer', sessionKey: 'agent:reviewer:slack:channel:c0work0001:thread:1712345678.123456',
    channelId: 'c0work0001:thread:1712345678.123456', runId: 'r1' }),
  { agentId: 'reviewer', sessionKey: 'agent:reviewer:slack:channel:c0work0001:thread:1712345678.123456',
    channelId: 'C0WORK0001', threadId: '1712345678.123456', runId: 'r1', messageProvider: 'slack' });
  // Without a session key: the Slack conversation and OpenClaw's provider name.
  assert.deepEqual(agentCtx({ channelId: 'slack', conversationId: 'channel:C0WORK0001', accountId: 'planner' }),
    { channelId: 'C0WORK0001', accountId: 'planner', messageProvider: 'slack' });
  // A tool of a Slack turn (what OpenClaw hands a tool factory).
  assert.deepEqual(toolCtx({ agentId: 'planner', sessionKey: 'agent:planner:slack:channel:c0work0001', sessionId: 's1',
    deliveryContext: { channel: 'slack', to: 'channel:C0WORK0001', accountId: 'planner' }, nativeChannelId: 'C0WORK0001' }),
  { agentId: 'planner', sessionKey: 'agent:planner:slack:channel:c0work0001', sessionId: 's1', channelId: 'C0WORK0001', accountId: 'planner' });
  assert.deepEqual(toolCtx({ agentId: 'planner', sessionKey: 'agent:main:main',
    deliveryContext: { channel: 'slack', to: 'channel:C0WORK0001', accountId: 'planner', threadId: '1712345678.123456' } }),
  { agentId: 'planner', sessionKey: 'agent:main:main', channelId: 'C0WORK0001', threadId: '1712345678.123456', accountId: 'planner' });
  // Slack sessions are listed under the plugin's (upper-case) channel id.
  await runModify('before_prompt_build', { prompt: 'p' }, { agentId: 'planner', sessionKey: 'agent:planner:slack:channel:c0work0001' });
  // (the thread's session was recorded by the message_sending above).
  assert.deepEqual(g.sessions.list('C0WORK0001'), [
    { sessionKey: 'agent:planner:slack:channel:c0work0001:thread:1700000000.000100', agentId: 'planner', channelId: 'C0WORK0001', threadId: '1700000000.000100' },
    { sessionKey: 'agent:planner:slack:channel:c0work0001', agentId: 'planner', channelId: 'C0WORK0001' }]);
  assert.deepEqual(g.sessions.list('c0work0001'), []);
});

await step('Slack message_received: the text before_dispatch saw, mentions <@U...> and <@U...|name>, thread ts, bots by slackUserId', async () => {
  const { messageReceivedEvent } = mod._internals;
  // What OpenClaw 2026.9.6 hands message_received for a Slack message: the
  // command text (every <@...> cut out), the ts as messageId, thread_ts as threadId.
  const human = { from: 'slack:channel:C0WORK0001', content: 'THREAD-QUESTION: do the tests cover it?',
    messageId: '1712345679.000200', senderId: 'U0ALICE001', threadId: '1712345678.123456',
    sessionKey: 'agent:reviewer:slack:channel:c0work0001:thread:1712345678.123456',
    metadata: { to: 'channel:C0WORK0001', provider: 'slack', surface: 'slack', guildId: 'T0DIRIGENT', senderName: 'alice' } };
  const mctx = { channelId: 'slack', accountId: 'reviewer', conversationId: 'channel:C0WORK0001',
    sessionKey: human.sessionKey, messageId: human.messageId, senderId: 'U0ALICE001' };
  // before_dispatch (the bridge's own, never claiming) brings the text agents read.
  const bd = hooks.filter((h) => h.name === 'before_dispatch');
  assert.equal(bd.length, 1, 'the bridge registered one before_dispatch');
  const observed = runObserve('message_received', human, mctx);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(await bd[0].handler({ messageId: human.messageId, content: human.content, channel: 'slack',
    body: '<@U0REVIEW2> (reviewer) THREAD-QUESTION: do the tests cover it? cc <@U0CODER03|coder> <@U0REVIEW2>',
    sessionKey: human.sessionKey, senderId: 'U0ALICE001', isGroup: true }, mctx), undefined);
  await observed;
  let seen = (await stats()).seen.message_received;
  assert.deepEqual(seen.event, { messageId: '1712345679.000200', channelId: 'C0WORK0001', threadId: '1712345678.123456',
    isDm: false, senderId: 'U0ALICE001', senderIsBot: false,
    content: '<@U0REVIEW2> THREAD-QUESTION: do the tests cover it? cc <@U0CODER03|coder> <@U0REVIEW2>',
    mentions: ['U0REVIEW2', 'U0CODER03'] });
  assert.deepEqual(seen.ctx, { channelId: 'C0WORK0001', accountId: 'reviewer', sessionKey: human.sessionKey, messageProvider: 'slack' });
  // Another account's report of the same message: the kept text at once.
  const t0 = Date.now();
  await runObserve('message_received', { ...human, sessionKey: 'agent:coder:slack:channel:c0work0001:thread:1712345678.123456' },
    { ...mctx, accountId: 'coder', sessionKey: 'agent:coder:slack:channel:c0work0001:thread:1712345678.123456' });
  assert.ok(Date.now() - t0 < 1000, 'no wait for a text already seen');
  assert.deepEqual((await stats()).seen.message_received.event.mentions, ['U0REVIEW2', 'U0CODER03']);
  // A hand-off of nothing but a mention: OpenClaw falls back to the raw
  // text, rendered; the plugin gets Slack's own text at once. A top-level
  // message answered in a thread (replyToMode all) is no thread message.
  const t1 = Date.now();
  await runObserve('message_received', { content: '<@U0PLANNE1> (planner)', messageId: '1712345680.000300',
    threadId: '1712345680.000300', senderId: 'U0MODERATR', sessionKey: 'agent:planner:slack:channel:c0work0001',
    metadata: { to: 'channel:C0WORK0001' } }, { channelId: 'slack', accountId: 'planner' });
  assert.ok(Date.now() - t1 < 1000, 'no wait for a whole text');
  seen = (await stats()).seen.message_received;
  assert.deepEqual(seen.event, { messageId: '1712345680.000300', channelId: 'C0WORK0001', isDm: false,
    senderId: 'U0MODERATR', senderIsBot: false, content: '<@U0PLANNE1>', mentions: ['U0PLANNE1'] });
  // No before_dispatch (an account that does not dispatch it): forwarded
  // after the wait, with the event's own text.
  const t2 = Date.now();
  await runObserve('message_received', { content: 'no mention here', messageId: '1712345681.000400', senderId: 'U0PLANNE1',
    sessionKey: 'agent:coder:slack:channel:c0work0001' }, { channelId: 'slack', accountId: 'coder' });
  assert.ok(Date.now() - t2 >= 2900, `waited for before_dispatch (${Date.now() - t2} ms)`);
  assert.deepEqual((await stats()).seen.message_received.event, { messageId: '1712345681.000400', channelId: 'C0WORK0001',
    isDm: false, senderId: 'U0PLANNE1', senderIsBot: false, content: 'no mention here', mentions: [] });
  assert.ok(logs.some((l) => /message_received slack C0WORK0001 message 1712345681\.000400 .*no before_dispatch within 3000 ms/.test(l.m)),
    'the wait is logged');
  // Bots by the plugin's config: agents' slackUserId, slack.moderatorUserId.
  const saved = g.nativeConfig;
  try {
    g.nativeConfig = { slack: { moderatorUserId: 'U0MODERATR' }, discord: { moderatorUserId: '99' },
      agents: { planner: { slackUserId: 'U0PLANNE1' }, reviewer: { discordUserId: '1002', slackUserId: 'U0REVIEW2' } } };
    const ev = (senderId) => messageReceivedEvent({ content: 'x', messageId: '1.2', senderId,
      sessionKey: 'agent:coder:slack:channel:c0work0001' }, {}, undefined).senderIsBot;
    assert.deepEqual(['U0MODERATR', 'U0PLANNE1', 'U0REVIEW2', '1002', '99', 'U0ALICE001'].map(ev), [true, true, true, true, true, false]);
  } finally {
    g.nativeConfig = saved;
  }
  // A DM: isDm from the key.
  assert.equal(messageReceivedEvent({ content: 'hi', messageId: '1.3', senderId: 'U0ALICE001',
    sessionKey: 'agent:planner:slack:direct:u0alice001' }, { channelId: 'slack' }, 'hi').isDm, true);
});

await step('agent_end: this run only (output, toolCalls), once per runId', async () => {
  const messages = [
    { role: 'user', content: 'old' }, { role: 'assistant', content: [{ type: 'text', text: 'old answer' }] },
    { role: 'user', content: [{ type: 'text', text: 'new' }] },
    { role: 'assistant', content: [{ type: 'toolCall', id: 't1', name: 'probe_echo', arguments: {} }] },
    { role: 'toolResult', toolCallId: 't1', content: [{ type: 'text', text: 'echo' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'done' }] },
  ];
  const octx = { runId: 'run-7', agentId: 'planner', sessionKey: 'agent:planner:discord:channel:111' };
  await runObserve('agent_end', { runId: 'run-7', messages, success: true }, octx);
  let seen = (await stats()).seen.agent_end;
  assert.deepEqual(seen.event, { runId: 'run-7', success: true, output: 'done', toolCalls: 1 });
  assert.deepEqual(seen.ctx, { agentId: 'planner', sessionKey: 'agent:planner:discord:channel:111',
    channelId: '111', runId: 'run-7', messageProvider: 'discord' });
  // OpenClaw's retry of the same run: not forwarded a second time.
  await runObserve('agent_end', { runId: 'run-7', messages: [...messages, { role: 'user', content: 'again' },
    { role: 'assistant', content: [{ type: 'text', text: 'NO_REPLY' }] }], success: true }, octx);
  seen = (await stats()).seen.agent_end;
  assert.equal(seen.event.output, 'done');
  await runObserve('agent_end', { runId: 'run-8', messages: messages.slice(0, 4), success: true }, octx);
  seen = (await stats()).seen.agent_end;
  assert.deepEqual(seen.event, { runId: 'run-8', success: true, output: '', toolCalls: 1 });
});

await step('message_received: Discord ids from the session key, mentions from the content', async () => {
  await runObserve('message_received', { from: 'discord:channel:111', content: 'hi <@1002> and <@!1003> <@1002>',
    messageId: 'm1', senderId: '5', sessionKey: 'agent:planner:discord:channel:111:thread:222',
    threadId: '222', metadata: { guildId: '9', to: 'channel:222' } }, { channelId: 'discord', accountId: 'a1' });
  const seen = (await stats()).seen.message_received;
  assert.deepEqual(seen.event, { messageId: 'm1', channelId: '111', threadId: '222', guildId: '9', isDm: false,
    senderId: '5', senderIsBot: false, content: 'hi <@1002> and <@!1003> <@1002>', mentions: ['1002', '1003'] });
  assert.deepEqual(seen.ctx, { channelId: '111', accountId: 'a1',
    sessionKey: 'agent:planner:discord:channel:111:thread:222', messageProvider: 'discord' });
});

await step('plugin threads call log/session_patch/sessions_list while 300 calls are in flight', async () => {
  const before = await stats();
  const calls = [];
  for (let i = 0; i < 100; i++) {
    calls.push(tool('probe_echo', threadCtx).execute(`c${i}`, { i }).then((r) => assert.equal(r.details.params.i, i)));
    calls.push(runModify('before_model_resolve', { prompt: i % 2 ? 'silence' : 'x' }, { agentId: 'planner',
      sessionKey: `agent:planner:discord:channel:${500 + i}` }));
    calls.push(runModify('before_prompt_build', { prompt: 'p' }, { agentId: 'planner', sessionKey: threadCtx.sessionKey }));
  }
  await Promise.all(calls);
  // Let the probe's threads run on while the main thread idles.
  await new Promise((r) => setTimeout(r, 300));
  const after = await stats();
  assert.ok(after.ticks > before.ticks + 20, `probe threads kept ticking (${before.ticks} -> ${after.ticks})`);
  assert.ok(after.patches > 0 && after.lists > 0, `thread session_patch ${after.patches}, sessions_list ${after.lists}`);
  assert.deepEqual(after.lastList, [{ sessionKey: 'agent:probe:discord:channel:42', agentId: 'probe', channelId: '42' }]);
  assert.equal(after.bogusHookStatus, -1, 'unknown hook refused with OC_ERR_INVALID');
  assert.equal(after.dupToolStatus, -4, 'duplicate tool refused with OC_ERR_CONFLICT');
  assert.equal(after.lateRegisterStatus, -1, 'register_tool after init refused with OC_ERR_INVALID');
  assert.ok(logs.some((l) => l.level === 'debug' && /bridge_probe: tick \d+/.test(l.m)), 'thread log lines arrive');
});

await step('session_patch persists: the bridge returns the override first, on every run', async () => {
  const octx = { agentId: 'probe', sessionKey: 'agent:probe:discord:channel:42' };
  assert.deepEqual(await runModify('before_model_resolve', { prompt: 'talk' }, octx), { providerOverride: 'np', modelOverride: 'nm' });
  const file = { sessions: journal(stateFile) };
  assert.deepEqual(file.sessions['agent:probe:discord:channel:42'],
    { agentId: 'probe', channelId: '42', providerOverride: 'np', modelOverride: 'nm' });
  assert.deepEqual(file.sessions[threadCtx.sessionKey], { agentId: 'planner', channelId: '111', threadId: '222' });
});

await step('session journal: one line per new session, shared between processes, compacted, torn line skipped', async () => {
  const { SessionStore } = mod._internals;
  const file = path.join(scratch, 'journal-test.jsonl');
  const a = new SessionStore(file);
  for (let c = 0; c < 2000; c++)
    for (const agent of ['planner', 'reviewer', 'coder', 'qa']) a.see({ sessionKey: `agent:${agent}:discord:channel:${7000 + c}` });
  // Seeing them again writes nothing.
  for (let c = 0; c < 2000; c++) a.see({ sessionKey: `agent:qa:discord:channel:${7000 + c}` });
  assert.equal(fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length, 8000, 'one line per new session');
  const b = new SessionStore(file); // another process
  assert.equal(b.list('7001').length, 4);
  a.patch('agent:coder:discord:channel:7001', 'np', 'nm');
  b.checkedAt = 0; // its next refresh is due
  assert.deepEqual(b.override('agent:coder:discord:channel:7001'), { providerOverride: 'np', modelOverride: 'nm' });
  // Many patches of one key: the journal is compacted, the latest wins.
  for (let i = 0; i < 12000; i++) a.patch('agent:coder:discord:channel:7002', i % 2 ? 'np' : null, i % 2 ? `m${i}` : null);
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
  assert.ok(lines < 8000 * 2 + 2048, `compacted (${lines} lines)`);
  assert.deepEqual(a.override('agent:coder:discord:channel:7002'), { providerOverride: 'np', modelOverride: 'm11999' });
  fs.appendFileSync(file, '{"k":"agent:x:discord:chan'); // a writer died mid-line
  const c = new SessionStore(file);
  assert.deepEqual(c.override('agent:coder:discord:channel:7002'), { providerOverride: 'np', modelOverride: 'm11999' });
  assert.equal(c.list('7999').length, 4);
});

await step('ABI 1.1: session_reset/run_abort offered only with OpenClaw\'s SDK, and wired to it', async () => {
  const host = async (call, key) => (await tool('probe_host', threadCtx).execute('h', { call, key })).details;
  // Here the SDK cannot be resolved (no openclaw beside the staged plugin):
  // NULL pointers, so the plugin answers "not supported by this host".
  assert.deepEqual(await host('run_abort', threadCtx.sessionKey), { offered: false, status: -7 });
  assert.deepEqual(await host('session_reset', threadCtx.sessionKey), { offered: false, status: -7 });
  // With the SDK (the test seam stands in for openclaw/plugin-sdk/*): the
  // calls reach it, from the plugin's worker thread through the main thread.
  const seen = [];
  const entries = new Map([[threadCtx.sessionKey, { sessionId: 'sid-1' }]]);
  const SEAM = Symbol.for('dirigent.openclaw-bridge.sdk');
  globalThis[SEAM] = {
    resolveActiveEmbeddedRunSessionId: (key) => (key === threadCtx.sessionKey ? 'sid-1' : key === 'agent:x:discord:channel:9' ? 'sid-9' : undefined),
    abortAgentHarnessRun: (sid) => { seen.push(['abort', sid]); if (sid === 'sid-9') throw new Error('boom'); return true; },
    getSessionEntry: ({ sessionKey }) => entries.get(sessionKey),
    // OpenClaw refuses while a run of the session is in flight: the first
    // attempt is refused that way, the retry succeeds.
    deleteSessionEntry: async (p) => {
      seen.push(['delete', p]);
      if (seen.filter((x) => x[0] === 'delete').length === 1)
        throw new Error(`Cannot mutate session while competing work is in flight for ${p.sessionKey}; retry after the run completes`);
      entries.delete(p.sessionKey);
      return true;
    },
  };
  try {
    await mod._internals.shutdownInstance('test: restart with the SDK');
    assert.deepEqual(await host('run_abort', threadCtx.sessionKey), { offered: true, status: 0 });
    assert.deepEqual(await host('run_abort', 'agent:x:discord:channel:1'), { offered: true, status: -2 });
    assert.deepEqual(await host('run_abort', 'agent:x:discord:channel:9'), { offered: true, status: -5 });
    assert.deepEqual(await host('session_reset', threadCtx.sessionKey), { offered: true, status: 0 });
    // The deletion is started, not awaited; refused once (a run in flight), retried after 1 s.
    const del = { sessionKey: threadCtx.sessionKey, expectedSessionId: 'sid-1', archiveTranscript: true };
    for (let i = 0; i < 100 && entries.has(threadCtx.sessionKey); i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await host('session_reset', threadCtx.sessionKey), { offered: true, status: -2 }, 'gone after the reset');
    assert.deepEqual(seen, [['abort', 'sid-1'], ['abort', 'sid-9'], ['delete', del], ['delete', del]]);
    assert.ok(logs.some((l) => /session_reset .*session sid-1 ended \(transcript archived\)/.test(l.m)), 'the outcome is logged');
  } finally {
    delete globalThis[SEAM];
  }
});

await step('ABI 1.2: decide offered only with OpenClaw\'s decision runtime; plugin threads get answers while the main thread stays free', async () => {
  const decide = async (request, threads = 1) => (await tool('probe_decide', threadCtx).execute('d', { request, threads })).details;
  const req = { question: 'Who should speak next, or nobody?', labels: ['planner', 'reviewer', 'nobody'],
    context: 'alice: which database?\nplanner: SQLite.', timeoutMs: 5000 };
  // No decisions in this registration's runtime: NULL, "not supported".
  assert.equal(g.decisions, null);
  assert.deepEqual(await decide(req), { offered: false, results: [] });
  assert.equal(mod._internals.decisionRuntime({ runtime: {} }), null);
  assert.equal(mod._internals.decisionRuntime({ get runtime() { throw new Error('no runtime here'); } }), null);
  const calls = [];
  let behave = () => ({ status: 'ok', result: { model: 'judge-1', answers: { next: { type: 'choice', choice: 'reviewer',
    probabilities: { planner: 0.1, reviewer: 0.82, nobody: 0.08 } } }, usage: { inputTokens: 120, outputTokens: 3 } },
  provenance: { providerId: 'scripted-decisions', rubricVersion: '1', runtimeGeneration: 'x' } });
  const runtime = { evaluate: async (batch, opts) => { calls.push({ batch, opts }); return behave(batch, opts); } };
  assert.equal(mod._internals.decisionRuntime({ runtime: { decisions: runtime } }), runtime);
  g.decisions = runtime;
  try {
    await mod._internals.shutdownInstance('test: restart with decisions');
    const ok = await decide(req);
    assert.deepEqual(ok, { offered: true, results: [{ status: 0, answer: { label: 'reviewer', probability: 0.82,
      source: 'openclaw:scripted-decisions/judge-1', tokensIn: 120, tokensOut: 3 } }] });
    // What OpenClaw was asked: one choice question, labels as criteria, the
    // context as state, the global selection (no agentId), a bounded signal.
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].batch, { state: req.context, questions: { next: { type: 'choice', instructions: req.question,
      criteria: { planner: 'planner', reviewer: 'reviewer', nobody: 'nobody' } } } });
    const { signal, ...opts } = calls[0].opts;
    assert.deepEqual(opts, { purpose: 'dirigent.turn-judge', rubricVersion: '1', timeoutMs: 5000 });
    assert.ok(signal instanceof AbortSignal);
    // Four plugin threads at once while 100 tool calls run: all answered, no deadlock.
    const busy = [];
    for (let i = 0; i < 100; i++) busy.push(tool('probe_echo', threadCtx).execute(`b${i}`, { i }));
    const [four] = await Promise.all([decide(req, 4), ...busy]);
    assert.equal(four.results.length, 4);
    assert.ok(four.results.every((r) => r.status === 0 && r.answer.label === 'reviewer'), JSON.stringify(four));
    // Unavailable outcomes map to statuses; no usage means no token fields.
    for (const [reason, status] of [['not-configured', -7], ['disabled', -7], ['deadline', -5], ['overloaded', -5], ['unsupported-input', -1]]) {
      behave = () => ({ status: 'unavailable', reason });
      assert.deepEqual((await decide(req)).results, [{ status, answer: null }], reason);
    }
    assert.ok(logs.some((l) => /decision model is unavailable \(not-configured\).*agents\.defaults\.decisionModel/.test(l.m)));
    behave = () => { const e = new Error('Invalid decision contract'); e.name = 'DecisionContractError'; throw e; };
    assert.deepEqual((await decide(req)).results, [{ status: -1, answer: null }]);
    behave = () => { throw new Error('Decision consumer authority closed.'); };
    assert.deepEqual((await decide(req)).results, [{ status: -5, answer: null }]);
    behave = () => ({ status: 'ok', result: { model: 'm', answers: { next: { type: 'choice', choice: 'ghost', probabilities: { ghost: 1 } } } },
      provenance: { providerId: 'p' } });
    assert.deepEqual((await decide(req)).results, [{ status: -5, answer: null }], 'a label not asked for');
    // A malformed request is refused by name without asking OpenClaw.
    const before = calls.length;
    for (const [bad, field] of [[{ ...req, labels: ['a', 'a'] }, /request\.labels: labels must be unique/],
      [{ ...req, labels: ['only'] }, /request\.labels: must be an array of 2\.\.32/],
      [{ ...req, timeoutMs: 0 }, /request\.timeoutMs: must be an integer 1\.\.60000/],
      [{ ...req, extra: 1 }, /request\.extra: unknown field/], [{ ...req, question: '' }, /request\.question/]]) {
      const n = logs.length;
      assert.deepEqual((await decide(bad)).results, [{ status: -1, answer: null }]);
      for (let i = 0; i < 100 && !logs.slice(n).some((l) => field.test(l.m)); i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(logs.slice(n).some((l) => field.test(l.m)), `logged ${field}`);
    }
    assert.equal(calls.length, before, 'OpenClaw not asked for a malformed request');
    // A provider that never answers: the plugin thread gets OC_ERR_IO after
    // timeoutMs; the late answer is dropped and the next call gets its own.
    let releaseFirst;
    behave = (batch, o) => (o.timeoutMs === 200
      ? new Promise((r) => { releaseFirst = () => r({ status: 'ok', result: { model: 'm', answers: { next: { type: 'choice', choice: 'planner',
        probabilities: { planner: 1, reviewer: 0, nobody: 0 } } } }, provenance: { providerId: 'late' } }); })
      : (releaseFirst(), new Promise((r) => setTimeout(() => r({ status: 'ok', result: { model: 'm', answers: { next: {
        type: 'choice', choice: 'nobody', probabilities: { planner: 0, reviewer: 0, nobody: 0.9 } } } }, provenance: { providerId: 'own' } }), 100))));
    assert.deepEqual((await decide({ ...req, timeoutMs: 200 })).results, [{ status: -5, answer: null }]);
    const second = (await decide(req)).results;
    assert.deepEqual(second, [{ status: 0, answer: { label: 'nobody', probability: 0.9, source: 'openclaw:own/m' } }]);
  } finally {
    g.decisions = null;
  }
});

await step('one-shot run: agent_end waits for calls in flight, then shuts down; next call restarts', async () => {
  tool('probe_echo', { ...threadCtx, oneShotCliRun: true }); // what OpenClaw's CLI run hands the factory
  const firstHost = g.instance.id;
  const calls = [];
  for (let i = 0; i < 50; i++) calls.push(tool('probe_echo', threadCtx).execute(`o${i}`, { i }));
  calls.push(runObserve('agent_end', { runId: 'run-9', messages: [], success: true }, { agentId: 'planner', sessionKey: threadCtx.sessionKey }));
  const results = await Promise.all(calls);
  assert.equal(results.slice(0, 50).filter((r) => r.details.params.i >= 0).length, 50);
  assert.equal(g.instance, null, 'plugin shut down after the one-shot run');
  assert.ok(logs.some((l) => /bridge_probe: stopped after \d+ ticks/.test(l.m)), 'shutdown ran and logged from its thread');
  const r = await tool('probe_echo', threadCtx).execute('again', { again: true });
  assert.deepEqual(r.details.params, { again: true });
  assert.ok(g.instance && g.instance.id > firstHost, 'a new instance answered');
  g.oneShotSeen = false;
});

await step('gateway_stop shuts down for good', async () => {
  const stoppedBefore = logs.filter((l) => /bridge_probe: stopped after/.test(l.m)).length;
  await runObserve('gateway_start', { port: 1 }, {});
  await runObserve('gateway_stop', { reason: 'test' }, {});
  assert.equal(g.instance, null);
  await assert.rejects(tool('probe_echo', threadCtx).execute('late', {}), /stopped with the gateway/);
  const seen = logs.filter((l) => /bridge_probe: stopped after/.test(l.m));
  assert.equal(seen.length, stoppedBefore + 1);
});

await step('register: an OpenClaw agent bound to Discord or Slack but missing from the plugin\'s agents is named in a warning', async () => {
  const n = logs.length;
  const api = fakeApi(base, 'full');
  api.config = { bindings: [
    { agentId: 'ghost', match: { channel: 'discord', accountId: 'ghost' } },
    { agentId: 'spectre', match: { channel: 'slack', accountId: 'spectre' } },
    { agentId: 'planner', match: { channel: 'telegram' } },
  ] };
  bridge.register(api);
  const warned = logs.slice(n).filter((l) => l.level === 'warn' && /not in plugins\.entries\.dirigent\.config\.agents/.test(l.m));
  assert.equal(warned.length, 2, JSON.stringify(logs.slice(n)));
  assert.match(warned[0].m, /agent ghost answers on Discord .*add each with its discordUserId$/);
  assert.match(warned[1].m, /agent spectre answers on Slack .*add each with its slackUserId$/);
  assert.doesNotMatch(warned.map((w) => w.m).join(), /planner/);
  await runObserve('gateway_stop', { reason: 'test' }, {});
});

clearTimeout(watchdog);
console.log(`unit: ${passed} steps passed`);
