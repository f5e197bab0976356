// compare.mjs -- `make compare`: stories played several ways in a real
// `openclaw gateway run` with the official Discord plugin (@openclaw/discord),
// one bot account per agent, the scripted model (model.mjs with --usage
// estimate) and build/fake-discord. Loopback only.
//
//   node compare.mjs --build <abs build dir> --cache <npm cache dir>
//                    --work <scratch dir> --home <HOME with the plugins installed>
//                    --out <markdown file>
//
// The ways (one column each): OpenClaw alone; OpenClaw with a broadcast
// group (sequential, maxRounds 2, maxTurns 2 x agents); OpenClaw with
// Dirigent as configured today (no judge); Dirigent with the judge asking
// OpenClaw's decision models (judge.source "host": the test plugin
// decisions-plugin/ registers a scripted provider with
// api.registerDecisionProvider, selected by agents.defaults.decisionModel);
// Dirigent with the judge asking an OpenAI-compatible endpoint (judge.source
// "openai": judge.mjs). All share the gateway stage's configuration (the
// README's example: allowBots, requireMention false, silent replies allowed
// in groups, the "collect" queue); each run gets a channel of its own, so no
// session history carries over.
//
// The stories:
//   answers  alice asks a question naming no agent; planner and reviewer
//            answer, coder passes (NO_REPLY); then a follow-up only coder
//            answers. Played with 3, 6 and 10 agents: the agents beyond the
//            three have nothing to say (their model answers NO_REPLY).
//   bots     alice asks planner and reviewer to settle a question between
//            them; each answers every message of the other (bot-to-bot, as
//            allowBots permits) and never gives in. Nothing but a loop guard
//            ends it: OpenClaw's own (botLoopProtection, set tighter than
//            its default so it trips on a loaded machine too), Dirigent's
//            turn.maxAgentMessages, or the judge.
//
// It counts at the scripted model (calls, estimated tokens), at the judge
// (its calls and estimated tokens, in a row of their own) and at the fake
// Discord (messages per bot, OpenClaw warnings, NO_REPLY, a scripted answer
// posted more than once, agents' runs overlapping, wall time until the
// channel is quiet), prints the tables and writes them to --out.
//
// Environment:
//   COMPARE_QUICK=1        CI's short form: the answers story, 3 agents,
//                          Dirigent only (does it build, start and answer?)
//   COMPARE_AGENTS=3,6,10  agent counts of the answers story
//   COMPARE_STORIES=answers,bots
//   DIRIGENT_COMPARE_WAYS=alone,broadcast,dirigent,judge-host,judge-openai
//   DIRIGENT_COMPARE_QUIET_MS  quiet time that ends a message (default 30000)
// Without a filter: every way for the answers story with 3 agents; OpenClaw
// alone, the broadcast group, Dirigent and Dirigent with the host judge for
// 6 and 10 agents and for the bots story.
// The judge ways need a plugin with the judge (include/openclaw/plugin.h at
// ABI minor 2 or more and the judge config key in manifest.json); without
// it they are skipped with a line that says so.
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
// Up to ten agents: the story's three, then agents with nothing to say.
const ALL_AGENTS = Object.fromEntries(['planner', 'reviewer', 'coder', 'agent4', 'agent5', 'agent6', 'agent7', 'agent8',
  'agent9', 'agent10'].map((a, i) => [a, { id: `1100000000000000${String(i + 1).padStart(2, '0')}`, token: `${a}-token` }]));
const ROLES = { planner: 'plans the work and splits it up', reviewer: 'reviews proposals for risks',
  coder: 'writes and changes the code' };
const nameOf = (id) => (id === HUMAN.id ? 'alice' : id === MOD.id ? 'moderator'
  : Object.keys(ALL_AGENTS).find((a) => ALL_AGENTS[a].id === id) ?? `?${id}`);

// ---- the stories --------------------------------------------------------------------------
// Each: the human messages, what each agent answers to each (null or
// missing: it passes), the model's rules for n agents, and the judge's script.

const ANSWERS = [
  { tag: 'STORY-1', text: 'STORY-1: the cache needs a database. Which one should we use?',
    answers: { planner: 'Planner: SQLite in WAL mode, one file per workspace.',
      reviewer: 'Reviewer: agreed, with a busy timeout so two writers never fail.' } },
  { tag: 'STORY-2', text: 'STORY-2: good. Who writes the migration?',
    answers: { coder: 'Coder: I will write it today, with a rollback step.' } },
];
const BOTS = [
  { tag: 'STORY-B', text: 'STORY-B: planner and reviewer, settle it between you: tabs or spaces?',
    answers: { planner: 'Planner: tabs. One character per level, and everyone sets their own width.',
      reviewer: 'Reviewer: spaces. The file looks the same in every viewer.' } },
];
const PLANNER_AGAIN = 'Planner: still tabs, and here is one more reason.';
const REVIEWER_AGAIN = 'Reviewer: still spaces, and here is one more reason.';

const STORIES = {
  answers: {
    title: 'answers',
    messages: ANSWERS,
    rules: (names) => [
      // A broadcast follow-up round ("Group thread round N ... otherwise
      // reply NO_REPLY"): nothing new to add.
      { name: 'pass-round', lastUserIncludes: 'Group thread round', anyTurn: true, reply: { text: 'NO_REPLY' } },
      // The newest human message first: a run that collected both answers the latest.
      ...[...ANSWERS].reverse().flatMap((m) => names.map((a) => ({ name: `${a}-${m.tag}`, model: `${a}-model`,
        lastUserIncludes: m.tag, anyTurn: true, unlessSaid: true, reply: { text: m.answers[a] ?? 'NO_REPLY' } }))),
      // Anything else (a sibling's message, a hand-off): pass.
      ...names.map((a) => ({ name: `${a}-pass`, model: `${a}-model`, anyTurn: true, reply: { text: 'NO_REPLY' } })),
    ],
    // The judge that knows the story: the latest state of the talk first.
    judge: { default: 'nobody', rules: [
      { name: 'coder answered', contextIncludes: ANSWERS[1].answers.coder, label: 'nobody' },
      { name: 'follow-up', contextIncludes: 'STORY-2', label: 'coder' },
      { name: 'reviewer answered', contextIncludes: ANSWERS[0].answers.reviewer, label: 'nobody' },
      { name: 'planner answered', contextIncludes: ANSWERS[0].answers.planner, label: 'reviewer' },
      { name: 'question', contextIncludes: 'STORY-1', label: 'planner' },
    ] },
  },
  bots: {
    title: 'bots',
    messages: BOTS,
    rules: (names) => [
      { name: 'pass-round', lastUserIncludes: 'Group thread round', anyTurn: true, reply: { text: 'NO_REPLY' } },
      { name: 'planner-first', model: 'planner-model', lastUserIncludes: 'STORY-B', anyTurn: true, unlessSaid: true,
        reply: { text: BOTS[0].answers.planner } },
      { name: 'reviewer-first', model: 'reviewer-model', lastUserIncludes: 'STORY-B', anyTurn: true, unlessSaid: true,
        reply: { text: BOTS[0].answers.reviewer } },
      // Never give in: every other message gets one more reason.
      { name: 'planner-again', model: 'planner-model', anyTurn: true, reply: { text: PLANNER_AGAIN } },
      { name: 'reviewer-again', model: 'reviewer-model', anyTurn: true, reply: { text: REVIEWER_AGAIN } },
      ...names.map((a) => ({ name: `${a}-pass`, model: `${a}-model`, anyTurn: true, reply: { text: 'NO_REPLY' } })),
    ],
    judge: { default: 'nobody', rules: [
      { name: 'both said it', contextIncludes: BOTS[0].answers.reviewer, label: 'nobody' },
      { name: 'planner said it', contextIncludes: BOTS[0].answers.planner, label: 'reviewer' },
      { name: 'question', contextIncludes: 'STORY-B', label: 'planner' },
    ] },
  },
};
// The bots story's loop guard (OpenClaw's botLoopProtection), the same in
// every way: tighter than the default 20 events a minute, which a loaded
// machine's slow runs may never reach.
const BOT_LOOP = { maxEventsPerWindow: 6, windowSeconds: 600, cooldownSeconds: 600 };

// What OpenClaw posts when a run fails or ends without a visible answer
// (the same list the gateway stage checks).
const WARNINGS = [/⚠️/, /couldn't (generate|produce)/i, /did not produce a visible reply/i,
  /something went wrong/i, /superseded/i, /SCRIPT-MISS/];

// ---- the runs -------------------------------------------------------------------------------

const WAY_TITLES = {
  alone: 'OpenClaw alone', broadcast: 'OpenClaw + broadcast group', dirigent: 'OpenClaw + Dirigent',
  'judge-host': 'Dirigent + judge (OpenClaw decision model)', 'judge-openai': 'Dirigent + judge (OpenAI-compatible)',
};
const list = (v) => (v ? v.split(',').map((x) => x.trim()).filter(Boolean) : null);
const QUICK = process.env.COMPARE_QUICK === '1';
const onlyWays = list(process.env.DIRIGENT_COMPARE_WAYS) ?? (QUICK ? ['dirigent'] : null);
const agentCounts = (list(process.env.COMPARE_AGENTS) ?? (QUICK ? ['3'] : ['3', '6', '10'])).map(Number);
const stories = list(process.env.COMPARE_STORIES) ?? (QUICK ? ['answers'] : ['answers', 'bots']);
for (const n of agentCounts) if (!(n >= 3 && n <= 10)) die(`COMPARE_AGENTS: ${n} is not a count of 3..10`);
for (const s of stories) if (!STORIES[s]) die(`COMPARE_STORIES: ${s} is not a story (answers, bots)`);
for (const w of onlyWays ?? []) if (!WAY_TITLES[w]) die(`DIRIGENT_COMPARE_WAYS: ${w} is not a way (${Object.keys(WAY_TITLES).join(', ')})`);

// The judge exists in this build when the plugin's ABI header has minor 2
// (decide) and its manifest a judge config key.
function judgeMissing() {
  const h = fs.readFileSync(path.join(ROOT, 'include', 'openclaw', 'plugin.h'), 'utf8');
  const minor = Number(/#define OC_ABI_MINOR (\d+)/.exec(h)?.[1] ?? 0);
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'manifest.json'), 'utf8'));
  const hasKey = !!manifest.configSchema?.properties?.judge;
  if (minor >= 2 && hasKey) return null;
  return `judge not available in this build (plugin ABI minor ${minor} < 2${hasKey ? '' : ' / no judge config key in manifest.json'})`;
}
const JUDGE_MISSING = judgeMissing();

const RUN = String(Date.now() % 1e12).padStart(12, '0');
const runs = [];
for (const story of stories)
  for (const n of story === 'answers' ? agentCounts : [3]) {
    const full = story === 'answers' && n === 3;
    const ways = onlyWays ?? (full ? Object.keys(WAY_TITLES) : ['alone', 'broadcast', 'dirigent', 'judge-host']);
    for (const way of ways)
      runs.push({ story, n, way, title: WAY_TITLES[way], names: Object.keys(ALL_AGENTS).slice(0, n),
        channel: `21${RUN}${String(runs.length + 1).padStart(4, '0')}`,
        skip: way.startsWith('judge-') ? JUDGE_MISSING : null });
  }
for (const r of runs.filter((x) => x.skip)) note(`${r.story}, ${r.n} agents, ${r.title}: skipped: ${r.skip}`);
const broadcastEntry = (channel, names) => ({
  strategy: 'sequential',
  [`discord:${channel}`]: { agents: [...names], maxRounds: 2, maxTurns: 2 * names.length },
});

// ---- servers ------------------------------------------------------------------------------

fs.mkdirSync(opt.work, { recursive: true });
const fake = await startServer(opt.work, 'fake-discord', path.join(opt.build, 'fake-discord'), [
  '--guild', GUILD, '--heartbeat-ms', '5000',
  ...[MOD, ...Object.values(ALL_AGENTS)].map((u) => ['--user', `${u.token}=${u.id}`]).flat(),
]);
const model = await startServer(opt.work, 'model', NODE, [path.join(HERE, 'model.mjs'), '--usage', 'estimate',
  '--record', path.join(opt.work, 'compare-model-requests.jsonl')]);
const judge = await startServer(opt.work, 'judge', NODE, [path.join(HERE, 'judge.mjs'),
  '--record', path.join(opt.work, 'compare-judge-openai.jsonl')]);
for (const [n, u] of [['fake-discord', fake.url], ['model', model.url], ['judge', judge.url]])
  if (!u.startsWith('http://127.0.0.1:')) die(`${n} is not on loopback: ${u}`);
const FAKE = fake.url.replace(/\/api\/v10$/, '');
const JUDGE = judge.url.replace(/\/v1$/, '');
for (const [name, u] of [['moderator', MOD], ...Object.entries(ALL_AGENTS)])
  await postJson(`${FAKE}/_fake/users`, { token: u.token, userId: u.id, bot: true, username: name });
await postJson(`${FAKE}/_fake/users`, { token: HUMAN.token, userId: HUMAN.id, bot: false, username: HUMAN.name });
for (const r of runs) await postJson(`${FAKE}/_fake/channels`, { id: r.channel, name: `work-${r.story}-${r.n}-${r.way}` });

const messages = (ch) => getJson(`${FAKE}/_fake/messages?channel=${ch}`);
const modelRequests = () => getJson(`${model.url}/_requests`);
const gatewaySessions = async () => {
  const l = await getJson(`${FAKE}/_fake/gateway`);
  return Array.isArray(l) ? l : l.sessions ?? [];
};
// The test decision provider (judge-host): its plugin folder, script and record.
const DECISIONS_DIR = path.join(HERE, 'decisions-plugin');
const DECISIONS_SCRIPT = path.join(opt.work, 'compare-judge-script.json');
const DECISIONS_RECORD = path.join(opt.work, 'compare-judge-host.jsonl');
const readJsonl = (file) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

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
for (const a of Object.keys(ALL_AGENTS)) fs.mkdirSync(path.join(home, 'agents', a), { recursive: true });
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
  ...Object.fromEntries(Object.entries(ALL_AGENTS).flatMap(([a, u]) => [
    [`${a.toUpperCase()}_BOT_TOKEN`, u.token], [`${a.toUpperCase()}_USER_ID`, u.id]])),
};
const gwPort = await freePort();

// The example's config for run.names (its three agents, and the extra
// ones built the same way), the way's plugin setup, the story's loop guard.
function configFor(run) {
  const d = example.plugins.entries.dirigent;
  const judged = run.way.startsWith('judge-');
  const agents = Object.fromEntries(run.names.map((a) => [a, { discordUserId: `\${${a.toUpperCase()}_USER_ID}`,
    ...(judged ? { role: ROLES[a] ?? 'has nothing to add to this team\'s questions' } : {}) }]));
  const judgeCfg = run.way === 'judge-host' ? { source: 'host', timeoutMs: 10_000, minConfidence: 0.5 }
    : run.way === 'judge-openai' ? { source: 'openai', baseUrl: judge.url, model: 'scripted-judge', timeoutMs: 10_000, minConfidence: 0.5 }
      : null;
  const dirigent = run.way === 'alone' || run.way === 'broadcast' ? { ...d, enabled: false }
    : { ...d, config: { ...d.config, agents, ...(judgeCfg ? { judge: judgeCfg } : {}),
      discord: { ...d.config.discord, apiBase: fake.url, timeoutMs: 5000 },
      // As in the gateway stage: a run can take tens of seconds on a
      // loaded machine; no turn may pass on by the timeout meanwhile.
      turn: { ...d.config.turn, timeoutSec: 3600 } } };
  const discord = example.channels.discord;
  const cfg = {
    ...installed,
    ...example,
    update: { checkOnStart: false },
    telemetry: { enabled: false },
    tools: { toolSearch: false },
    gateway: { mode: 'local', bind: 'loopback', port: gwPort, auth: { mode: 'token', token: 'gateway-test-token' } },
    models: { providers: { script: { baseUrl: model.url, apiKey: 'script-key', api: 'openai-completions',
      models: run.names.map((a) => modelEntry(`${a}-model`)) } } },
    agents: {
      ...example.agents,
      defaults: { ...example.agents.defaults, ...(run.way === 'judge-host' ? { decisionModel: 'scripted-decisions/judge' } : {}) },
      entries: Object.fromEntries(run.names.map((a) => [a, { workspace: `\${HOME}/agents/${a}`, model: `script/${a}-model` }])),
    },
    bindings: run.names.map((a) => ({ agentId: a, match: { channel: 'discord', accountId: a } })),
    channels: { ...example.channels, discord: { ...discord,
      accounts: Object.fromEntries(run.names.map((a) => [a, { token: `\${${a.toUpperCase()}_BOT_TOKEN}` }])),
      ...(run.story === 'bots' ? { botLoopProtection: BOT_LOOP } : {}) } },
    plugins: {
      ...(installed.plugins ?? {}),
      ...example.plugins,
      ...(run.way === 'judge-host' ? { load: { ...(installed.plugins?.load ?? {}),
        paths: [...(installed.plugins?.load?.paths ?? []), DECISIONS_DIR] } } : {}),
      entries: {
        ...(installed.plugins?.entries ?? {}),
        ...example.plugins.entries,
        dirigent,
        ...(run.way === 'judge-host' ? { 'scripted-decisions': { enabled: true,
          config: { script: DECISIONS_SCRIPT, record: DECISIONS_RECORD } } } : {}),
      },
    },
  };
  if (run.way === 'broadcast') cfg.broadcast = broadcastEntry(run.channel, run.names);
  return cfg;
}

// ---- one gateway per run -----------------------------------------------------------------------

const runId = (run) => `${run.story}-${run.n}-${run.way}`;

async function runGateway(run, body) {
  const cfg = configFor(run);
  writeConfig(home, cfg);
  fs.writeFileSync(path.join(opt.work, `compare-${runId(run)}.openclaw.json`), `${JSON.stringify(cfg, null, 2)}\n`);
  const log = path.join(opt.work, `compare-${runId(run)}.log`);
  const fd = fs.openSync(log, 'w');
  let exited = null;
  const gw = spawn(NODE, [OPENCLAW, 'gateway', 'run', '--port', String(gwPort), '--bind', 'loopback', '--verbose'], {
    cwd: home, stdio: ['ignore', fd, fd], env: { ...process.env, ...offlineEnv, ...env },
  });
  children.push(gw);
  gw.on('exit', (code, sig) => { exited = code ?? sig; });
  const tail = () => fs.readFileSync(log, 'utf8').slice(-3000);
  const bots = run.names.map((a) => ALL_AGENTS[a].id);
  const up = await waitFor(async () => {
    if (exited !== null) return 'exited';
    try {
      const ready = new Set((await gatewaySessions()).filter((x) => x.identified).map((x) => x.userId));
      return bots.every((u) => ready.has(u)) ? 'ready' : null;
    } catch {
      return null;
    }
  }, 900_000, 500); // minutes when the machine is busy
  if (up !== 'ready') die(`${run.title}: the ${run.n} bots did not log in (${up ?? 'timeout'}); log tail:\n${tail()}`);
  if (run.way !== 'alone' && run.way !== 'broadcast' &&
      !await waitFor(() => /dirigent\.so dirigent .* started/.test(fs.readFileSync(log, 'utf8')), 60_000, 500))
    die(`${run.title}: dirigent.so did not start; log tail:\n${tail()}`);
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

// Turns Dirigent gave (its transition log in the store).
function turnsGiven(db, run) {
  const ctl = spawnSync(path.join(opt.build, 'dirigent-ctl'), ['--db', db, '--json', 'why', run.channel], { encoding: 'utf8' });
  fs.writeFileSync(path.join(opt.work, `compare-${runId(run)}.why.json`), ctl.stdout + ctl.stderr);
  try {
    const why = JSON.parse(ctl.stdout);
    return why.transitions.filter((t) => t.speakerAfter && t.speakerAfter !== t.speakerBefore).length;
  } catch (e) {
    note(`dirigent-ctl why: ${e.message}: ${ctl.stdout.slice(0, 500)}${ctl.stderr.slice(0, 500)}`);
    return null;
  }
}

// Dirigent's own record of the channel's runs (its cost ledger): every run
// with the turn manager's verdict and the model calls OpenClaw reported for
// it (model_call_ended).
function readLedger(db, run) {
  let rows = [];
  try {
    const d = new DatabaseSync(db, { readOnly: true });
    rows = d.prepare('SELECT agent_id, run_id, verdict, model_calls, tokens_in, tokens_out FROM cost_runs' +
      ' WHERE channel_id = ? ORDER BY at_ms').all(run.channel);
    d.close();
  } catch (e) {
    note(`cost ledger unreadable: ${e.message}`);
    return null;
  }
  fs.writeFileSync(path.join(opt.work, `compare-${runId(run)}.ledger.json`), `${JSON.stringify(rows, null, 1)}\n`);
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

function measure(run, calls, judgeCalls, posted, spans, gwLog, turns) {
  const story = STORIES[run.story];
  const agentOf = (q) => q.model.replace(/-model$/, '');
  const isPass = (q) => !q.reply.text || /^\s*NO_REPLY\s*$/.test(q.reply.text);
  const bots = posted.filter((m) => m.author.id !== HUMAN.id);
  const perBot = {};
  for (const m of bots) perBot[nameOf(m.author.id)] = (perBot[nameOf(m.author.id)] ?? 0) + 1;
  const agentPosts = bots.filter((m) => m.author.id !== MOD.id);
  const warnings = agentPosts.filter((m) => WARNINGS.some((re) => re.test(m.content)));
  const noReply = agentPosts.filter((m) => /NO_REPLY/.test(m.content));
  // Each scripted answer of the story should reach the channel exactly once.
  const answerTexts = story.messages.flatMap((m) => Object.entries(m.answers).filter(([, t]) => t)
    .map(([agent, text]) => ({ agent, tag: m.tag, text })));
  const delivered = answerTexts.map((a) => ({ ...a, posts: agentPosts.filter((m) => m.content.includes(a.text)) }));
  const duplicates = delivered.reduce((n, a) => n + Math.max(0, a.posts.length - 1), 0);
  // One at a time: from the model call that produced an answer until it was
  // posted, no other agent's model call may start (a pass ends with its call:
  // the scripted model answers at once).
  const overlaps = [];
  for (const p of agentPosts) {
    const agent = nameOf(p.author.id);
    const tp = Date.parse(p.timestamp);
    const own = calls.filter((q) => agentOf(q) === agent && q.reply.text && p.content.includes(q.reply.text) && q.at <= tp).at(-1);
    if (!own) continue;
    for (const q of calls)
      if (agentOf(q) !== agent && q.at > own.at && q.at < tp) overlaps.push(`${agentOf(q)} called the model while ${agent}'s answer was under way`);
  }
  const callsBy = Object.fromEntries(run.names.map((a) => [a, calls.filter((q) => agentOf(q) === a).length]));
  const passes = calls.filter(isPass).length;
  const tokensIn = calls.reduce((n, q) => n + (q.usage?.prompt_tokens ?? 0), 0);
  const tokensOut = calls.reduce((n, q) => n + (q.usage?.completion_tokens ?? 0), 0);
  const judgeIn = judgeCalls.reduce((n, q) => n + (q.usage?.inputTokens ?? q.usage?.prompt_tokens ?? 0), 0);
  const judgeOut = judgeCalls.reduce((n, q) => n + (q.usage?.outputTokens ?? q.usage?.completion_tokens ?? 0), 0);
  const wallMs = spans.reduce((n, s) => n + (s.last - s.sent), 0);
  // What ended a bot-to-bot exchange: OpenClaw's pair guard logs each
  // message it drops ("discord: bot-to-bot loop detected before media
  // download, suppressing for 582s", 2026.9.6); Dirigent's limit posts a notice.
  const loopGuard = (gwLog.match(/bot-to-bot loop detected/g) ?? []).length;
  return {
    run, calls: calls.length, callsBy, answers: calls.length - passes, passes, tokensIn, tokensOut, perBot,
    judgeCalls: judgeCalls.length, judgeIn, judgeOut, judgeMisses: judgeCalls.filter((q) => q.miss || q.answers?.some((a) => a.miss)).length,
    agentPosts: agentPosts.length, moderatorPosts: perBot.moderator ?? 0, answerCount: answerTexts.length,
    delivered: delivered.filter((a) => a.posts.length > 0).length, warnings, noReply, duplicates,
    wallMs, capped: spans.some((s) => s.cappedAt), overlaps, turns, loopGuard, humanMessages: story.messages.length,
  };
}

// ---- the tables ------------------------------------------------------------------------------------

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
const fmt = (n) => n.toLocaleString('en-US');
const per = (o) => Object.entries(o).filter(([, n]) => n).map(([k, n]) => `${k} ${n}`).join(', ');
const ROWS = [
  ['agent-model calls (answers + passes)', (r) => `${r.calls} (${r.answers} + ${r.passes})`],
  ['agent-model calls per human message', (r) => (r.calls / r.humanMessages).toFixed(1)],
  ['model calls per agent', (r) => per(r.callsBy) || '0'],
  ['agent-model tokens in / out (estimated)', (r) => `${fmt(r.tokensIn)} / ${fmt(r.tokensOut)}`],
  ['judge calls; tokens in / out (estimated)', (r) => (r.run.way.startsWith('judge-')
    ? `${r.judgeCalls}; ${fmt(r.judgeIn)} / ${fmt(r.judgeOut)}${r.judgeMisses ? ` (${r.judgeMisses} unscripted)` : ''}` : '–')],
  ['total tokens (judge included)', (r) => fmt(r.tokensIn + r.tokensOut + r.judgeIn + r.judgeOut)],
  ['messages posted', (r) => `${r.agentPosts + r.moderatorPosts}${Object.keys(r.perBot).length ? ` (${per(r.perBot)})` : ''}`],
  ['scripted answers delivered', (r) => `${r.delivered} of ${r.answerCount}`],
  ['OpenClaw warnings in the channel', (r) => String(r.warnings.length)],
  ['NO_REPLY leaked into the channel', (r) => String(r.noReply.length)],
  ['duplicate answers', (r) => String(r.duplicates)],
  ['wall time until quiet', (r) => `${(r.wallMs / 1000).toFixed(1)} s${r.capped ? ' (capped)' : ''}`],
  ['agents spoke one at a time', (r) => (r.overlaps.length ? `no (${r.overlaps.length} overlaps)` : 'yes')],
  ['turns given by Dirigent', (r) => (r.turns === null || r.turns === undefined ? '–' : String(r.turns))],
  ['runs let through / withheld (Dirigent\'s ledger)', (r) => (r.ledger ? `${r.ledger.granted} / ${r.ledger.withheld}` : '–')],
  ['model calls on withheld runs (Dirigent\'s ledger)', (r) => (r.ledger ? String(r.ledger.callsWithheld) : '–')],
];
const BOT_ROWS = [['messages OpenClaw\'s loop guard dropped ("bot-to-bot loop detected" in its log)', (r) => String(r.loopGuard)]];
function table(rs, rows) {
  const cell = (r, f) => (r.skipped ? (f === rows[0][1] ? `skipped: ${r.skipped}` : '–') : f(r));
  return [
    `| | ${rs.map((r) => r.run.title).join(' | ')} |`,
    `|---|${rs.map(() => '---').join('|')}|`,
    ...rows.map(([label, f]) => `| ${label} | ${rs.map((r) => cell(r, f)).join(' | ')} |`),
  ].join('\n');
}
// The tables of the results so far, written to --out (after every run:
// an interrupted compare still leaves what it measured).
function writeTables(final) {
  const sections = [];
  for (const s of stories)
    for (const n of s === 'answers' ? agentCounts : [3]) {
      const rs = results.filter((r) => r.run.story === s && r.run.n === n);
      if (!rs.length) continue;
      const head = s === 'answers'
        ? `### Story "answers", ${n} agents\n\nalice asks a question naming no agent (planner and reviewer answer, coder passes), ` +
          `then a follow-up only coder answers${n > 3 ? `; the other ${n - 3} agents have nothing to say (their model answers NO_REPLY)` : ''}.`
        : '### Story "bots", 3 agents\n\nalice asks planner and reviewer to settle a question between them; each answers every ' +
          `message of the other and never gives in (bot-to-bot, allowBots true). OpenClaw's loop guard in every way: ` +
          `\`channels.discord.botLoopProtection: ${JSON.stringify(BOT_LOOP)}\`.`;
      sections.push(`${head}\n\n${table(rs, s === 'bots' ? [...ROWS, ...BOT_ROWS] : ROWS)}`);
    }
  // Agent-model calls per human message against the number of agents.
  const scaling = results.filter((r) => r.run.story === 'answers' && !r.skipped);
  if (new Set(scaling.map((r) => r.run.n)).size > 1) {
    const ways = [...new Set(scaling.map((r) => r.run.way))];
    const ns = [...new Set(scaling.map((r) => r.run.n))].sort((a, b) => a - b);
    sections.push(['### Agent-model calls per human message against the number of agents (story "answers")', '',
      `| agents | ${ways.map((w) => WAY_TITLES[w]).join(' | ')} |`, `|---|${ways.map(() => '---').join('|')}|`,
      ...ns.map((n) => `| ${n} | ${ways.map((w) => {
        const r = scaling.find((x) => x.run.n === n && x.run.way === w);
        return r ? `${(r.calls / r.humanMessages).toFixed(1)} (answers ${(r.answers / r.humanMessages).toFixed(1)})` : '–';
      }).join(' | ')} |`)].join('\n'));
  }
  const today = new Date().toISOString().slice(0, 10);
  const md = `Measured ${today} with OpenClaw ${versions.openclaw}, @openclaw/discord ${versions.discord}, ` +
    `Dirigent ${versions.dirigent}, Node ${versions.node} (\`make compare\`${QUICK ? ', COMPARE_QUICK=1' : ''}: a real ` +
    '`openclaw gateway run`, one Discord bot per agent, a scripted model, a fake Discord on loopback; tokens are ' +
    'estimated as characters / 4 of what was sent and answered). Broadcast group: sequential, maxRounds 2, ' +
    'maxTurns 2 x agents.\n\n' +
    `${JUDGE_MISSING ? `Judge columns: ${JUDGE_MISSING}.\n\n` : ''}${sections.join('\n\n')}\n`;
  fs.mkdirSync(path.dirname(opt.out), { recursive: true });
  fs.writeFileSync(opt.out, md);
  fs.writeFileSync(path.join(opt.work, 'compare-results.json'), `${JSON.stringify(results, null, 1)}\n`);
  if (final) console.log(`\n${md}`);
}
// ---- measure ------------------------------------------------------------------------------------

const results = [];
for (const run of runs) {
  if (run.skip) {
    results.push({ run, skipped: run.skip });
    continue;
  }
  const story = STORIES[run.story];
  note(`${run.story}, ${run.n} agents, ${run.title}: channel ${run.channel}`);
  await postJson(`${model.url}/_script`, { rules: story.rules(run.names) });
  await postJson(`${JUDGE}/_script`, story.judge);
  fs.writeFileSync(DECISIONS_SCRIPT, `${JSON.stringify(story.judge)}\n`);
  const before = (await modelRequests()).length;
  const judgeBefore = { host: readJsonl(DECISIONS_RECORD).length, openai: (await getJson(`${JUDGE}/_requests`)).length };
  const r = await runGateway(run, async (log) => {
    const spans = [];
    for (const m of story.messages) spans.push(await sayAndWait(run.channel, m.text, log));
    return { spans, log };
  });
  // Only this run's channel: OpenClaw resumes work a gateway left queued
  // (in a HOME used before), and that must not count here.
  const calls = (await modelRequests()).slice(before).filter((q) => JSON.stringify(q.raw.messages ?? []).includes(run.channel));
  const judgeCalls = run.way === 'judge-host' ? readJsonl(DECISIONS_RECORD).slice(judgeBefore.host)
    : run.way === 'judge-openai' ? (await getJson(`${JUDGE}/_requests`)).slice(judgeBefore.openai) : [];
  const posted = await messages(run.channel);
  const id = runId(run);
  fs.writeFileSync(path.join(opt.work, `compare-${id}.transcript.json`), `${JSON.stringify(posted, null, 2)}\n`);
  fs.writeFileSync(path.join(opt.work, `compare-${id}.calls.json`), `${JSON.stringify(calls.map((q) => ({
    at: q.at, model: q.model, rule: q.rule, reply: q.reply.text, usage: q.usage, lastUser: q.lastUser.slice(-300) })), null, 1)}\n`);
  const gwLog = fs.readFileSync(r.log, 'utf8');
  const managed = run.way !== 'alone' && run.way !== 'broadcast';
  const db = path.join(home, '.openclaw', 'dirigent', 'dirigent.db');
  const res = measure(run, calls, judgeCalls, posted, r.spans, gwLog, managed ? turnsGiven(db, run) : null);
  if (managed) res.ledger = readLedger(db, run);
  results.push(res);
  writeTables(false);
}
writeTables(true);

for (const r of results.filter((x) => !x.skipped)) {
  const t = `${r.run.story}, ${r.run.n} agents, ${r.run.title}`;
  for (const o of r.overlaps) note(`${t}: ${o}`);
  for (const m of [...r.warnings, ...r.noReply]) note(`${t}: leaked by ${nameOf(m.author.id)}: ${m.content.slice(0, 120)}`);
  if (r.ledger) {
    const l = r.ledger;
    note(`${t}: ledger: ${l.runs} runs, ${l.granted} let through, ${l.withheld} withheld; ${l.calls} model calls reported ` +
      `(the scripted model saw ${r.calls}); ${l.callsWithheld} on withheld runs, ${l.callsUndecided} on runs without a decision`);
  }
}
note(`table written to ${opt.out}; configs, logs, transcripts and calls in ${opt.work}`);
cleanup();
process.exit(results.some((r) => !r.skipped && r.calls === 0) ? 1 : 0);
