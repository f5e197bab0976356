// compare.mjs -- `make compare`: one story, three ways, in a real
// `openclaw gateway run` with the official Discord plugin (@openclaw/discord),
// three agents with a bot account each, the scripted model (model.mjs with
// --usage estimate) and build/fake-discord. Loopback only.
//
//   node compare.mjs --build <abs build dir> --cache <npm cache dir>
//                    --work <scratch dir> --home <HOME with the plugins installed>
//                    --out <markdown file>
//
// The ways: OpenClaw alone; OpenClaw with a broadcast group (sequential,
// maxRounds 2, maxTurns 6: each agent may speak twice); OpenClaw with
// Dirigent. All three share the configuration of the gateway stage (the
// README's example: allowBots, requireMention false, silent replies allowed
// in groups, the "collect" queue); only the broadcast entry and whether
// the dirigent plugin is enabled differ. Each way gets a channel of its own,
// so no session history carries over from one way to the next.
//
// The story: alice asks #work a question naming no agent; planner and
// reviewer have an answer, coder passes (NO_REPLY); then alice's follow-up,
// which only coder answers. Every other run the model is asked for (a sibling's
// message, a hand-off, a broadcast follow-up round) passes. The same rules
// serve all three ways.
//
// It counts at the scripted model (calls, estimated tokens in/out) and at
// the fake Discord (messages per bot, OpenClaw warnings, NO_REPLY, a scripted
// answer posted more than once, agents' runs overlapping, wall time until
// the channel is quiet), prints one table and writes it to --out.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { DatabaseSync } from 'node:sqlite';
import { getJson, postJson, waitFor, sleep, makeChildren, offlineEnv, modelEntry, writeConfig } from './lib.mjs';

const opt = {};
for (let i = 2; i < process.argv.length; i += 2) opt[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['build', 'cache', 'work', 'home', 'out'])
  if (!opt[k]) {
    console.error(`compare: --${k} is required`);
    process.exit(2);
  }
const NODE = process.execPath;
const OPENCLAW = path.join(opt.cache, 'node_modules', 'openclaw', 'openclaw.mjs');
const HERE = path.dirname(new URL(import.meta.url).pathname);
const ROOT = path.join(HERE, '..', '..', '..');
// Quiet: nothing posted and no model call for this long after the last one.
const QUIET_MS = Number(process.env.DIRIGENT_COMPARE_QUIET_MS ?? 30_000);
const MESSAGE_MS = 600_000; // the most one human message may keep the room busy

const note = (m) => console.log(`compare: ${m}`);
const { die, startServer, cleanup, children } = makeChildren('compare');

const GUILD = '910000000000000001';
const HUMAN = { id: '110000000000000050', token: 'alice-token', name: 'alice' };
const MOD = { id: '110000000000000099', token: 'moderator-token', name: 'moderator' };
const AGENTS = {
  planner: { id: '110000000000000001', token: 'planner-token' },
  reviewer: { id: '110000000000000002', token: 'reviewer-token' },
  coder: { id: '110000000000000003', token: 'coder-token' },
};
const NAMES = Object.keys(AGENTS);
const nameOf = (id) => (id === HUMAN.id ? 'alice' : id === MOD.id ? 'moderator'
  : NAMES.find((a) => AGENTS[a].id === id) ?? `?${id}`);

// The story: two human messages, and what each agent answers to each
// (null: it passes).
const STORY = [
  { tag: 'STORY-1', text: 'STORY-1: the cache needs a database. Which one should we use?',
    answers: { planner: 'Planner: SQLite in WAL mode, one file per workspace.',
      reviewer: 'Reviewer: agreed, with a busy timeout so two writers never fail.', coder: null } },
  { tag: 'STORY-2', text: 'STORY-2: good. Who writes the migration?',
    answers: { planner: null, reviewer: null, coder: 'Coder: I will write it today, with a rollback step.' } },
];
const ANSWER_TEXTS = STORY.flatMap((m) => NAMES.filter((a) => m.answers[a]).map((a) => ({ agent: a, tag: m.tag, text: m.answers[a] })));
const RULES = [
  // A broadcast follow-up round ("Group thread round N ... otherwise reply
  // NO_REPLY"): nothing new to add.
  { name: 'pass-round', lastUserIncludes: 'Group thread round', anyTurn: true, reply: { text: 'NO_REPLY' } },
  // The newest human message first: a run that collected both answers the latest.
  ...[...STORY].reverse().flatMap((m) => NAMES.map((a) => ({ name: `${a}-${m.tag}`, model: `${a}-model`,
    lastUserIncludes: m.tag, anyTurn: true, unlessSaid: true, reply: { text: m.answers[a] ?? 'NO_REPLY' } }))),
  // Anything else (a sibling's message, a hand-off): pass.
  ...NAMES.map((a) => ({ name: `${a}-pass`, model: `${a}-model`, anyTurn: true, reply: { text: 'NO_REPLY' } })),
];

// What OpenClaw posts when a run fails or ends without a visible answer
// (the same list the gateway stage checks).
const WARNINGS = [/⚠️/, /couldn't (generate|produce)/i, /did not produce a visible reply/i,
  /something went wrong/i, /superseded/i, /SCRIPT-MISS/];

// Channel ids new on every run: a HOME used before keeps its sessions,
// and an old history would make the prompts longer.
const RUN = String(Date.now() % 1e12).padStart(12, '0');
const WAYS = [
  { id: 'alone', title: 'OpenClaw alone', channel: `21${RUN}0001` },
  { id: 'broadcast', title: 'OpenClaw + broadcast group', channel: `21${RUN}0002` },
  { id: 'dirigent', title: 'OpenClaw + Dirigent', channel: `21${RUN}0003` },
];
const only = process.env.DIRIGENT_COMPARE_WAYS;
const ways = only ? WAYS.filter((w) => only.split(',').includes(w.id)) : WAYS;
const broadcastEntry = (channel) => ({
  strategy: 'sequential',
  [`discord:${channel}`]: { agents: [...NAMES], maxRounds: 2, maxTurns: 6 },
});

// ---- servers ------------------------------------------------------------------------------

fs.mkdirSync(opt.work, { recursive: true });
const fake = await startServer(opt.work, 'fake-discord', path.join(opt.build, 'fake-discord'), [
  '--guild', GUILD, '--heartbeat-ms', '5000',
  ...[MOD, ...Object.values(AGENTS)].map((u) => ['--user', `${u.token}=${u.id}`]).flat(),
]);
const model = await startServer(opt.work, 'model', NODE, [path.join(HERE, 'model.mjs'), '--usage', 'estimate',
  '--record', path.join(opt.work, 'compare-model-requests.jsonl')]);
for (const [n, u] of [['fake-discord', fake.url], ['model', model.url]])
  if (!u.startsWith('http://127.0.0.1:')) die(`${n} is not on loopback: ${u}`);
const FAKE = fake.url.replace(/\/api\/v10$/, '');
for (const [name, u] of [['moderator', MOD], ...Object.entries(AGENTS)])
  await postJson(`${FAKE}/_fake/users`, { token: u.token, userId: u.id, bot: true, username: name });
await postJson(`${FAKE}/_fake/users`, { token: HUMAN.token, userId: HUMAN.id, bot: false, username: HUMAN.name });
for (const w of WAYS) await postJson(`${FAKE}/_fake/channels`, { id: w.channel, name: `work-${w.id}` });

const messages = (ch) => getJson(`${FAKE}/_fake/messages?channel=${ch}`);
const modelRequests = () => getJson(`${model.url}/_requests`);
const gatewaySessions = async () => {
  const list = await getJson(`${FAKE}/_fake/gateway`);
  return Array.isArray(list) ? list : list.sessions ?? [];
};

// ---- configuration (the gateway stage's, see gateway.mjs) -------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
const home = opt.home;
for (const a of NAMES) fs.mkdirSync(path.join(home, 'agents', a), { recursive: true });
let installed;
try {
  installed = JSON.parse(fs.readFileSync(path.join(home, '.openclaw', 'openclaw.json'), 'utf8'));
} catch (e) {
  die(`${home}/.openclaw/openclaw.json is missing (were @openclaw/discord and dirigent installed there?): ${e.message}`);
}
const example = JSON.parse(fs.readFileSync(path.join(HERE, '..', 'example', 'openclaw.json'), 'utf8').replaceAll('YOUR_GUILD_ID', GUILD));
const env = {
  HOME: home, DISCORD_GUILD_ID: GUILD, ADMIN_USER_ID: HUMAN.id, MODERATOR_USER_ID: MOD.id,
  DIRIGENT_MODERATOR_TOKEN: MOD.token, DISCORD_API_URL: fake.url,
  ...Object.fromEntries(Object.entries(AGENTS).flatMap(([a, u]) => [
    [`${a.toUpperCase()}_BOT_TOKEN`, u.token], [`${a.toUpperCase()}_USER_ID`, u.id]])),
};
const gwPort = await freePort();

function configFor(way) {
  const d = example.plugins.entries.dirigent;
  const cfg = {
    ...installed,
    ...example,
    update: { checkOnStart: false },
    telemetry: { enabled: false },
    tools: { toolSearch: false },
    gateway: { mode: 'local', bind: 'loopback', port: gwPort, auth: { mode: 'token', token: 'gateway-test-token' } },
    models: { providers: { script: { baseUrl: model.url, apiKey: 'script-key', api: 'openai-completions',
      models: NAMES.map((a) => modelEntry(`${a}-model`)) } } },
    agents: { ...example.agents, entries: Object.fromEntries(Object.entries(example.agents.entries)
      .map(([a, e]) => [a, { ...e, model: `script/${a}-model` }])) },
    plugins: {
      ...(installed.plugins ?? {}),
      ...example.plugins,
      entries: {
        ...(installed.plugins?.entries ?? {}),
        ...example.plugins.entries,
        dirigent: way.id === 'dirigent'
          ? { ...d, config: { ...d.config, discord: { ...d.config.discord, apiBase: fake.url, timeoutMs: 5000 },
            // As in the gateway stage: a run can take tens of seconds on a
            // loaded machine; no turn may pass on by the timeout meanwhile.
            turn: { ...d.config.turn, timeoutSec: 3600 } } }
          : { ...d, enabled: false },
      },
    },
  };
  if (way.id === 'broadcast') cfg.broadcast = broadcastEntry(way.channel);
  return cfg;
}

// ---- one gateway per way -----------------------------------------------------------------------

async function runGateway(way, body) {
  const cfg = configFor(way);
  writeConfig(home, cfg);
  fs.writeFileSync(path.join(opt.work, `compare-${way.id}.openclaw.json`), `${JSON.stringify(cfg, null, 2)}\n`);
  const log = path.join(opt.work, `compare-${way.id}.log`);
  const fd = fs.openSync(log, 'w');
  let exited = null;
  const gw = spawn(NODE, [OPENCLAW, 'gateway', 'run', '--port', String(gwPort), '--bind', 'loopback', '--verbose'], {
    cwd: home, stdio: ['ignore', fd, fd], env: { ...process.env, ...offlineEnv, ...env },
  });
  children.push(gw);
  gw.on('exit', (code, sig) => { exited = code ?? sig; });
  const tail = () => fs.readFileSync(log, 'utf8').slice(-3000);
  const up = await waitFor(async () => {
    if (exited !== null) return 'exited';
    try {
      const ready = new Set((await gatewaySessions()).filter((x) => x.identified).map((x) => x.userId));
      return Object.values(AGENTS).every((u) => ready.has(u.id)) ? 'ready' : null;
    } catch {
      return null;
    }
  }, 600_000, 500); // minutes when the machine is busy
  if (up !== 'ready') die(`${way.title}: the three bots did not log in (${up ?? 'timeout'}); log tail:\n${tail()}`);
  if (way.id === 'dirigent' &&
      !await waitFor(() => /dirigent\.so dirigent .* started/.test(fs.readFileSync(log, 'utf8')), 60_000, 500))
    die(`${way.title}: dirigent.so did not start; log tail:\n${tail()}`);
  await sleep(3000); // the Discord plugin finishes its startup after READY
  try {
    return await body(log);
  } finally {
    gw.kill('SIGTERM');
    if (!await waitFor(() => exited !== null, 60_000, 200)) gw.kill('SIGKILL');
    await waitFor(async () => (await gatewaySessions()).length === 0, 30_000, 200);
  }
}

// OpenClaw's own record of work under way (its --verbose log): an inbound
// message, a dispatch, a run, a delivery. A run can take a minute to start
// on a loaded machine; the log shows it coming long before the model call.
const ACTIVITY = /discord: inbound|message (received|queued|dispatch started|dispatch completed|processed)|session turn created|embedded run|run (registered|cleared)|delivered \d+ repl|Broadcasting|group-thread/;
function logTail(file) {
  let offset = 0;
  let rest = '';
  return () => {
    const fd = fs.openSync(file, 'r');
    const size = fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.max(0, size - offset));
    fs.readSync(fd, buf, 0, buf.length, offset);
    fs.closeSync(fd);
    offset = size;
    const lines = (rest + buf.toString('utf8')).split('\n');
    rest = lines.pop();
    return lines;
  };
}

// Sends a human message and waits until the channel is quiet: every
// dispatch OpenClaw started has completed, and nothing was posted, no model
// call made and no activity logged for QUIET_MS (or 3 x QUIET_MS whatever
// the dispatch count says). Returns {sent, last} (ms).
async function sayAndWait(channel, text, log) {
  const next = logTail(log);
  next(); // what came before this message
  const sent = Date.now();
  await postJson(`${FAKE}/_fake/messages`, { channelId: channel, authorId: HUMAN.id, content: text });
  let seen = '';
  let changed = Date.now();
  let open = 0;
  const calls = [];
  let lastSeq = (await modelRequests()).reduce((n, q) => Math.max(n, q.seq), 0);
  for (;;) {
    await sleep(1000);
    const active = next().filter((l) => ACTIVITY.test(l));
    open += active.filter((l) => /message dispatch started/.test(l)).length -
      active.filter((l) => /message dispatch completed/.test(l)).length;
    const msgs = await messages(channel);
    for (const q of await getJson(`${model.url}/_requests?since=${lastSeq}`)) {
      lastSeq = Math.max(lastSeq, q.seq);
      if (JSON.stringify(q.raw.messages ?? []).includes(channel)) calls.push(q);
    }
    const now = `${msgs.length}/${calls.length}`;
    if (now !== seen || active.length) {
      seen = now;
      changed = Date.now();
    }
    const busyFor = Date.now() - sent;
    const idle = Date.now() - changed;
    if ((calls.length > 0 && idle >= QUIET_MS && (open <= 0 || idle >= 3 * QUIET_MS)) || busyFor > MESSAGE_MS) {
      const times = [...msgs.map((m) => Date.parse(m.timestamp)), ...calls.map((q) => q.at)].filter((t) => t >= sent);
      return { sent, last: times.length ? Math.max(...times) : sent, cappedAt: busyFor > MESSAGE_MS, open };
    }
  }
}

// ---- measure ------------------------------------------------------------------------------------

const results = [];
for (const way of ways) {
  note(`${way.title}: channel ${way.channel}`);
  await postJson(`${model.url}/_script`, { rules: RULES });
  const before = (await modelRequests()).length;
  const r = await runGateway(way, async (log) => {
    const spans = [];
    for (const m of STORY) spans.push(await sayAndWait(way.channel, m.text, log));
    return { spans, log };
  });
  // Only this way's channel: OpenClaw resumes work a gateway left queued
  // (in a HOME used before), and that must not count here.
  const calls = (await modelRequests()).slice(before).filter((q) => JSON.stringify(q.raw.messages ?? []).includes(way.channel));
  const posted = await messages(way.channel);
  fs.writeFileSync(path.join(opt.work, `compare-${way.id}.transcript.json`), `${JSON.stringify(posted, null, 2)}\n`);
  fs.writeFileSync(path.join(opt.work, `compare-${way.id}.calls.json`), `${JSON.stringify(calls.map((q) => ({
    at: q.at, model: q.model, rule: q.rule, reply: q.reply.text, usage: q.usage, lastUser: q.lastUser.slice(-300) })), null, 1)}\n`);
  const gwLog = fs.readFileSync(r.log, 'utf8');
  // Turns Dirigent gave (its transition log in the store).
  let turns = null;
  if (way.id === 'dirigent') {
    const ctl = spawnSync(path.join(opt.build, 'dirigent-ctl'), ['--db', path.join(home, '.openclaw', 'dirigent', 'dirigent.db'),
      '--json', 'why', way.channel], { encoding: 'utf8' });
    fs.writeFileSync(path.join(opt.work, 'compare-dirigent.why.json'), ctl.stdout + ctl.stderr);
    try {
      const why = JSON.parse(ctl.stdout);
      turns = why.transitions.filter((t) => t.speakerAfter && t.speakerAfter !== t.speakerBefore).length;

    } catch (e) {
      note(`dirigent-ctl why: ${e.message}: ${ctl.stdout.slice(0, 500)}${ctl.stderr.slice(0, 500)}`);
    }
  }
  const res = measure(way, calls, posted, r.spans, gwLog, turns);
  if (way.id === 'dirigent') {
    res.ledger = readLedger(path.join(home, '.openclaw', 'dirigent', 'dirigent.db'), way.channel);
    res.callsOf = (agent) => calls.filter((q) => q.model === `${agent}-model`)
      .map((q) => `${new Date(q.at).toISOString().slice(11, 23)} ${q.rule ?? '?'} -> ${JSON.stringify((q.reply.text ?? '').slice(0, 30))}`)
      .join('; ');
  }
  results.push(res);
}

// Dirigent's own record of the channel's runs (its cost ledger): every run
// with the turn manager's verdict and the model calls OpenClaw reported for
// it (model_call_ended). The proof of "one call per turn, none for agents
// without the turn" is per run, not a count against transitions.
function readLedger(db, channel) {
  let rows = [];
  try {
    const d = new DatabaseSync(db, { readOnly: true });
    rows = d.prepare('SELECT agent_id, run_id, verdict, model_calls, tokens_in, tokens_out FROM cost_runs' +
      ' WHERE channel_id = ? ORDER BY at_ms').all(channel);
    d.close();
  } catch (e) {
    note(`cost ledger unreadable: ${e.message}`);
    return null;
  }
  fs.writeFileSync(path.join(opt.work, 'compare-dirigent.ledger.json'), `${JSON.stringify(rows, null, 1)}\n`);
  const granted = rows.filter((r) => r.verdict === 1);
  const withheld = rows.filter((r) => r.verdict === 2 || r.verdict === 3);
  return {
    runs: rows.length,
    granted: granted.length,
    withheld: withheld.length,
    calls: rows.reduce((n, r) => n + r.model_calls, 0),
    maxPerGranted: granted.reduce((m, r) => Math.max(m, r.model_calls), 0),
    callsWithheld: withheld.reduce((n, r) => n + r.model_calls, 0),
    callsUndecided: rows.filter((r) => r.verdict === 0).reduce((n, r) => n + r.model_calls, 0),
    multi: granted.filter((r) => r.model_calls > 1),
  };
}

function measure(way, calls, posted, spans, gwLog, turns) {
  const agentOf = (q) => q.model.replace(/-model$/, '');
  const isPass = (q) => !q.reply.text || /^\s*NO_REPLY\s*$/.test(q.reply.text);
  const bots = posted.filter((m) => m.author.id !== HUMAN.id);
  const perBot = {};
  for (const m of bots) perBot[nameOf(m.author.id)] = (perBot[nameOf(m.author.id)] ?? 0) + 1;
  const agentPosts = bots.filter((m) => m.author.id !== MOD.id);
  const warnings = agentPosts.filter((m) => WARNINGS.some((re) => re.test(m.content)));
  const noReply = agentPosts.filter((m) => /NO_REPLY/.test(m.content));
  // Each scripted answer should reach the channel exactly once.
  const delivered = ANSWER_TEXTS.map((a) => ({ ...a, posts: agentPosts.filter((m) => m.content.includes(a.text)) }));
  const duplicates = delivered.reduce((n, a) => n + Math.max(0, a.posts.length - 1), 0);
  // One at a time: from the model call that produced an answer until it was
  // posted, no other agent's model call may start (a pass ends with its call:
  // the scripted model answers at once).
  const overlaps = [];
  for (const a of delivered)
    for (const p of a.posts) {
      const tp = Date.parse(p.timestamp);
      const own = calls.filter((q) => agentOf(q) === a.agent && q.reply.text === a.text && q.at <= tp).at(-1);
      if (!own) continue;
      for (const q of calls)
        if (agentOf(q) !== a.agent && q.at > own.at && q.at < tp)
          overlaps.push(`${agentOf(q)} called the model while ${a.agent}'s answer to ${a.tag} was under way`);
    }
  const callsBy = Object.fromEntries(NAMES.map((a) => [a, calls.filter((q) => agentOf(q) === a).length]));
  const passes = calls.filter(isPass).length;
  const tokensIn = calls.reduce((n, q) => n + (q.usage?.prompt_tokens ?? 0), 0);
  const tokensOut = calls.reduce((n, q) => n + (q.usage?.completion_tokens ?? 0), 0);
  const wallMs = spans.reduce((n, s) => n + (s.last - s.sent), 0);
  const broadcasts = (gwLog.match(/Broadcasting message to \d+ agents|group-threads/g) ?? []).length;
  return {
    way, calls: calls.length, callsBy, answers: calls.length - passes, passes, tokensIn, tokensOut, perBot,
    agentPosts: agentPosts.length, moderatorPosts: perBot.moderator ?? 0,
    delivered: delivered.filter((a) => a.posts.length > 0).length, warnings, noReply, duplicates,
    wallMs, capped: spans.some((s) => s.cappedAt), overlaps, turns, broadcasts,
  };
}

// ---- the table ------------------------------------------------------------------------------------

const version = (file) => {
  try { return JSON.parse(fs.readFileSync(file, 'utf8')).version; } catch { return '?'; }
};
// `openclaw plugins install` keeps an npm plugin in a project folder of its own.
const projects = path.join(home, '.openclaw', 'npm', 'projects');
const discordPkg = (fs.existsSync(projects) ? fs.readdirSync(projects) : [])
  .map((d) => path.join(projects, d, 'node_modules', '@openclaw', 'discord', 'package.json')).find((f) => fs.existsSync(f));
const versions = {
  openclaw: version(path.join(opt.cache, 'node_modules', 'openclaw', 'package.json')),
  discord: discordPkg ? version(discordPkg) : '?',
  dirigent: version(path.join(ROOT, 'manifest.json')),
  node: process.versions.node,
};
const per = (o) => Object.entries(o).filter(([, n]) => n).map(([k, n]) => `${k} ${n}`).join(', ');
const rows = [
  ['model calls (answers + passes)', (r) => `${r.calls} (${r.answers} + ${r.passes})`],
  ['model calls per agent', (r) => per(r.callsBy) || '0'],
  ['tokens in / out (estimated)', (r) => `${r.tokensIn.toLocaleString('en-US')} / ${r.tokensOut.toLocaleString('en-US')}`],
  ['messages posted', (r) => `${r.agentPosts + r.moderatorPosts}${Object.keys(r.perBot).length ? ` (${per(r.perBot)})` : ''}`],
  [`scripted answers delivered (of ${ANSWER_TEXTS.length})`, (r) => String(r.delivered)],
  ['OpenClaw warnings in the channel', (r) => String(r.warnings.length)],
  ['NO_REPLY leaked into the channel', (r) => String(r.noReply.length)],
  ['duplicate answers', (r) => String(r.duplicates)],
  ['wall time until quiet (both messages)', (r) => `${(r.wallMs / 1000).toFixed(1)} s${r.capped ? ' (capped)' : ''}`],
  ['agents spoke one at a time', (r) => (r.overlaps.length ? `no (${r.overlaps.length} overlaps)` : 'yes')],
  ['turns given by Dirigent', (r) => (r.turns === null ? '–' : String(r.turns))],
  ['runs let through / withheld (Dirigent\'s ledger)', (r) => (r.ledger ? `${r.ledger.granted} / ${r.ledger.withheld}` : '–')],
  ['model calls per run let through (most); on withheld runs', (r) => (r.ledger ? `${r.ledger.maxPerGranted}; ${r.ledger.callsWithheld}` : '–')],
];
const table = [
  `| | ${results.map((r) => r.way.title).join(' | ')} |`,
  `|---|${results.map(() => '---').join('|')}|`,
  ...rows.map(([label, f]) => `| ${label} | ${results.map(f).join(' | ')} |`),
].join('\n');
const today = new Date().toISOString().slice(0, 10);
const md = `Measured ${today} with OpenClaw ${versions.openclaw}, @openclaw/discord ${versions.discord}, ` +
  `Dirigent ${versions.dirigent}, Node ${versions.node} (\`make compare\`: a real \`openclaw gateway run\`, ` +
  'three agents with a Discord bot each, a scripted model, a fake Discord on loopback).\n\n' +
  `Story: alice asks the channel a question naming no agent (planner and reviewer answer, coder passes), ` +
  `then a follow-up only coder answers. Broadcast group: \`${JSON.stringify(broadcastEntry('<channel>'))}\`.\n\n` +
  `${table}\n`;
fs.mkdirSync(path.dirname(opt.out), { recursive: true });
fs.writeFileSync(opt.out, md);
fs.writeFileSync(path.join(opt.work, 'compare-results.json'), `${JSON.stringify(results, null, 1)}\n`);
console.log(`\n${md}`);
for (const r of results) {
  for (const o of r.overlaps) note(`${r.way.title}: ${o}`);
  for (const m of [...r.warnings, ...r.noReply]) note(`${r.way.title}: leaked by ${nameOf(m.author.id)}: ${m.content.slice(0, 120)}`);
}
// Dirigent's own record, run by run (its cost ledger), replaces the old
// estimate from transition times (whole seconds, and a pass into rest
// writes no transition).
const dl = results.find((r) => r.ledger);
if (dl) {
  const l = dl.ledger;
  note(`${dl.way.title}: ledger: ${l.runs} runs, ${l.granted} let through, ${l.withheld} withheld; ` +
    `${l.calls} model calls reported (the scripted model saw ${dl.calls}); at most ${l.maxPerGranted} per run let through, ` +
    `${l.callsWithheld} on withheld runs, ${l.callsUndecided} on runs without a decision`);
  for (const run of l.multi)
    note(`${dl.way.title}: run ${run.run_id} of ${run.agent_id} (let through) made ${run.model_calls} model calls; ` +
      `that agent's calls in order: ${dl.callsOf(run.agent_id)}`);
  const met = l.callsWithheld === 0 && l.callsUndecided === 0 && l.calls === dl.calls;
  note(`${dl.way.title}: aim ${met ? 'met' : 'MISSED'}: no model call on a run Dirigent withheld, every call on a ` +
    `run it decided, every call the model saw counted; ${l.multi.length} run(s) let through made more than one call ` +
    '(OpenClaw retries a run whose answer is only NO_REPLY once: two NO_REPLY calls of that agent, seconds apart)');
}
note(`table written to ${opt.out}; configs, logs, transcripts and calls in ${opt.work}`);
cleanup();
process.exit(results.some((r) => r.calls === 0) ? 1 : 0);
