// slack.mjs -- the slack stage of `make check-openclaw`: a real, long-lived
// `openclaw gateway run` with the official Slack channel plugin
// (@openclaw/slack, Socket Mode), one Slack app per agent, against
// build/fake-slack (Web API through SLACK_API_URL, the Socket Mode websocket
// that apps.connections.open hands out) and the scripted model (model.mjs).
//
//   node slack.mjs --build <abs build dir> --cache <npm cache dir>
//                  --work <scratch dir> --home <HOME with @openclaw/slack installed>
//
// Slack plumbing only (Dirigent does not manage Slack channels yet; when
// run.sh installed its package into this HOME -- stage slack-dirigent -- it
// is loaded too, as README configures it for Discord, and must leave Slack
// alone): three agent apps and the moderator's bot in one workspace, one
// human, one channel. Checked at the fake's records and the model's:
//   - each agent app starts as Slack's SDK does (auth.test with the bot
//     token, apps.connections.open with the app token, hello) and acks every
//     envelope it gets;
//   - a human message mentioning planner: planner answers with
//     chat.postMessage by its own bot token, the others stay silent and
//     read planner's answer (bots see each other);
//   - a thread reply mentioning reviewer: reviewer answers in the thread;
//   - a disconnect message from Slack: the app reconnects and still answers;
//   - the session keys OpenClaw files the conversations under.
// The OpenClaw config it writes is kept as <work>/openclaw.json.example.
// Loopback only.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { DatabaseSync } from 'node:sqlite';
import {
  getJson, postJson, waitFor, sleep, makeChecks, makeChildren, offlineEnv, modelEntry, writeConfig,
} from './lib.mjs';

const opt = {};
for (let i = 2; i < process.argv.length; i += 2) opt[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['build', 'cache', 'work', 'home'])
  if (!opt[k]) {
    console.error(`slack: --${k} is required`);
    process.exit(2);
  }
const NODE = process.execPath;
const OPENCLAW = path.join(opt.cache, 'node_modules', 'openclaw', 'openclaw.mjs');
const HERE = path.dirname(new URL(import.meta.url).pathname);
const STEP_MS = 180_000; // one step on a loaded 2-core machine
const t0 = Date.now();

const { check, note, summary } = makeChecks('slack');
const { die, startServer, cleanup, children } = makeChildren('slack');

// The workspace: Slack ids (U/A/C + upper-case letters and digits).
const TEAM = 'T0DIRIGENT';
const WORK = 'C0WORK0001';
const HUMAN = { id: 'U0ALICE001', name: 'alice' };
const MOD = { id: 'U0MODERATR', token: 'xoxb-moderator-0001', name: 'moderator' };
const AGENTS = Object.fromEntries(['planner', 'reviewer', 'coder'].map((a, i) => {
  const id = `U0${a.toUpperCase().slice(0, 6)}${i + 1}`;
  const app = `A${id.slice(1)}`; // the fake's default app id of a bot user
  return [a, { id, app, token: `xoxb-${a}-000${i + 1}`, appToken: `xapp-1-${app}-1-${a}secret${i + 1}` }];
}));
const nameOf = (id) => (id === HUMAN.id ? 'alice' : id === MOD.id ? 'moderator'
  : Object.keys(AGENTS).find((a) => AGENTS[a].id === id) ?? `?${id}`);
const LEAKS = [/NO_REPLY/i, /⚠️/, /couldn't (generate|produce)/i, /did not produce a visible reply/i,
  /something went wrong/i, /SCRIPT-MISS/, /UNEXPECTED/];

// ---- servers --------------------------------------------------------------------------

fs.mkdirSync(opt.work, { recursive: true });
const socketUrlFile = path.join(opt.work, 'fake-slack-socket.url');
const fake = await startServer(opt.work, 'fake-slack', path.join(opt.build, 'fake-slack'), [
  '--team', TEAM, '--socket-url-file', socketUrlFile,
  '--human', `${HUMAN.id}=${HUMAN.name}`, '--bot', `${MOD.token}=${MOD.id}=${MOD.name}`,
  ...Object.entries(AGENTS).flatMap(([a, u]) => ['--bot', `${u.token}=${u.id}=${a}`, '--app', `${u.appToken}=${u.app}=${u.id}`]),
  '--channel', `${WORK}=work=${[HUMAN.id, MOD.id, ...Object.values(AGENTS).map((u) => u.id)].join(',')}`,
]);
// Dirigent, when run.sh installed its package into this HOME: loaded as
// the README says (the example config, a fake Discord for its moderator),
// it manages Discord only and must leave Slack alone.
const WITH_DIRIGENT = fs.existsSync(path.join(opt.home, '.openclaw', 'extensions', 'dirigent'));
const GUILD = '910000000000000001';
const DG = { admin: '110000000000000050', mod: '110000000000000099', modToken: 'moderator-token',
  agents: { planner: '110000000000000001', reviewer: '110000000000000002', coder: '110000000000000003' } };
const discord = WITH_DIRIGENT ? await startServer(opt.work, 'fake-discord', path.join(opt.build, 'fake-discord'),
  ['--guild', GUILD, '--user', `${DG.modToken}=${DG.mod}=moderator`]) : null;
const model = await startServer(opt.work, 'model', NODE, [path.join(HERE, 'model.mjs'), '--record', path.join(opt.work, 'model-requests.jsonl')]);
const SOCKET = fs.readFileSync(socketUrlFile, 'utf8').trim();
for (const [n, u] of [['fake-slack', fake.url], ['fake-slack socket', SOCKET], ['model', model.url]])
  if (!u.startsWith('http://127.0.0.1:')) die(`${n} is not on loopback: ${u}`);
const FAKE = fake.url.replace(/\/api$/, '');
note(`fake Slack ${fake.url} (Socket Mode ${SOCKET}), model ${model.url}`);

const setRules = (rules) => postJson(`${model.url}/_script`, { rules });
const modelRequests = () => getJson(`${model.url}/_requests`);
const messages = () => getJson(`${FAKE}/_fake/messages?channel=${WORK}`);
const requests = () => getJson(`${FAKE}/_fake/requests`);
const envelopes = () => getJson(`${SOCKET}/_fake/socket/envelopes`);
const connections = () => getJson(`${SOCKET}/_fake/socket/connections`);
const say = (text, threadTs) => postJson(`${FAKE}/_fake/messages`,
  { channel: WORK, user: HUMAN.id, text, ...(threadTs ? { thread_ts: threadTs } : {}) });

// ---- OpenClaw ------------------------------------------------------------------------

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
for (const a of Object.keys(AGENTS)) fs.mkdirSync(path.join(home, 'agents', a), { recursive: true });
const gwPort = await freePort();
let installed = {};
try {
  installed = JSON.parse(fs.readFileSync(path.join(home, '.openclaw', 'openclaw.json'), 'utf8'));
} catch (e) {
  die(`${home}/.openclaw/openclaw.json is missing (was @openclaw/slack installed there?): ${e.message}`);
}
// What a user writes for Slack (tokens from the environment), then what a
// test needs on top: scripted models, loopback ports, no update checks.
const slackSetup = {
  agents: {
    ownership: 'explicit',
    defaults: { silentReply: { group: 'allow' } },
    entries: Object.fromEntries(Object.keys(AGENTS).map((a) => [a, { workspace: `\${HOME}/agents/${a}`, model: `script/${a}-model` }])),
  },
  messages: { queue: { byChannel: { slack: 'collect' } } },
  bindings: Object.keys(AGENTS).map((a) => ({ agentId: a, match: { channel: 'slack', accountId: a } })),
  channels: {
    slack: {
      enabled: true,
      mode: 'socket',
      allowBots: true,
      joinIntro: false,
      groupPolicy: 'allowlist',
      // A bot's message reaches the other agents only when an owner named
      // here is a member of the channel (or the bot is in the channel's
      // `users`): @openclaw/slack's authorizeSlackBotRoomMessage.
      allowFrom: ['${ADMIN_SLACK_USER_ID}'],
      streaming: { mode: 'off' },
      channels: { [WORK]: { requireMention: false } },
      accounts: Object.fromEntries(Object.keys(AGENTS).map((a) => [a, {
        botToken: `\${${a.toUpperCase()}_SLACK_BOT_TOKEN}`, appToken: `\${${a.toUpperCase()}_SLACK_APP_TOKEN}`,
      }])),
    },
  },
};
const example = JSON.parse(fs.readFileSync(path.join(HERE, '..', 'example', 'openclaw.json'), 'utf8').replaceAll('YOUR_GUILD_ID', GUILD));
const dirigentEntry = example.plugins.entries.dirigent;
const config = {
  ...installed,
  ...slackSetup,
  update: { checkOnStart: false },
  telemetry: { enabled: false },
  tools: { toolSearch: false },
  gateway: { mode: 'local', bind: 'loopback', port: gwPort, auth: { mode: 'token', token: 'gateway-test-token' } },
  models: {
    providers: {
      script: { baseUrl: model.url, apiKey: 'script-key', api: 'openai-completions',
        models: ['planner-model', 'reviewer-model', 'coder-model'].map(modelEntry) },
    },
  },
  plugins: {
    ...(installed.plugins ?? {}),
    entries: {
      ...((installed.plugins && installed.plugins.entries) ?? {}),
      slack: { enabled: true },
      ...(WITH_DIRIGENT ? { dirigent: { ...dirigentEntry, config: { ...dirigentEntry.config,
        discord: { ...dirigentEntry.config.discord, apiBase: discord.url, timeoutMs: 5000 } } } } : {}),
    },
  },
};
writeConfig(home, config);
fs.writeFileSync(path.join(opt.work, 'openclaw.json.example'), `${JSON.stringify(config, null, 2)}\n`);
const gwEnv = {
  ...process.env, ...offlineEnv, HOME: home,
  SLACK_API_URL: fake.url,
  ADMIN_SLACK_USER_ID: HUMAN.id,
  ...(WITH_DIRIGENT ? {
    DISCORD_GUILD_ID: GUILD, ADMIN_USER_ID: DG.admin, MODERATOR_USER_ID: DG.mod, DIRIGENT_MODERATOR_TOKEN: DG.modToken,
    ...Object.fromEntries(Object.entries(DG.agents).map(([a, id]) => [`${a.toUpperCase()}_USER_ID`, id])),
  } : {}),
  ...Object.fromEntries(Object.entries(AGENTS).flatMap(([a, u]) => [
    [`${a.toUpperCase()}_SLACK_BOT_TOKEN`, u.token], [`${a.toUpperCase()}_SLACK_APP_TOKEN`, u.appToken]])),
};

const gwLog = path.join(opt.work, 'gateway.log');
const gwFd = fs.openSync(gwLog, 'w');
let gwExited = null;
const gw = spawn(NODE, [OPENCLAW, 'gateway', 'run', '--port', String(gwPort), '--bind', 'loopback', '--verbose'], {
  cwd: home, stdio: ['ignore', gwFd, gwFd], env: gwEnv,
});
children.push(gw);
gw.on('exit', (code, sig) => { gwExited = code ?? sig; });
const GW_NOISE = /dreaming cron reconcile failed|database integrity verification passed/;
const gwLogTail = () => fs.readFileSync(gwLog, 'utf8').split('\n').filter((l) => !GW_NOISE.test(l)).join('\n').slice(-3000);

// Each agent app has a websocket with its hello (this is where auth.test
// and apps.connections.open happened).
const connectedApps = async () => new Set((await connections()).filter((c) => c.helloSent).map((c) => c.appId));
const up = await waitFor(async () => {
  if (gwExited !== null) return 'exited';
  try {
    const apps = await connectedApps();
    return Object.values(AGENTS).every((u) => apps.has(u.app)) ? 'ready' : null;
  } catch {
    return null;
  }
}, 480_000, 500); // 80-210 s seen on the shared 2-core box
const tUp = Date.now();
if (!check('the three agent apps connected to the fake Slack in Socket Mode (hello)', up === 'ready',
  `${up ?? 'timeout'}; gateway log tail:\n${gwLogTail()}`)) {
  cleanup();
  process.exit(1);
}
note(`gateway up, apps connected ${((tUp - t0) / 1000).toFixed(1)} s after the start`);
if (WITH_DIRIGENT) {
  const loaded = await waitFor(() => /dirigent\.so dirigent .* started/.test(fs.readFileSync(gwLog, 'utf8')), 60_000, 500);
  check('dirigent.so started inside the same gateway (the installed package, the example config)', loaded, gwLogTail());
} else {
  note('Dirigent is not installed in this HOME: Slack alone');
}
const startReqs = await requests();
for (const [a, u] of Object.entries(AGENTS)) {
  check(`${a}: auth.test with its bot token, apps.connections.open with its app token (Bearer)`,
    startReqs.some((r) => r.method === 'auth.test' && r.token === u.token && r.ok === true) &&
    startReqs.some((r) => r.method === 'apps.connections.open' && r.authorization === `Bearer ${u.appToken}` && r.ok === true),
    JSON.stringify(startReqs.filter((r) => r.token === u.token || r.token === u.appToken).map((r) => [r.method, r.ok, r.error])));
}
// The plugin finishes its start (identity, runtime) after the socket is up.
await sleep(3000);

// ---- the story ---------------------------------------------------------------------

await setRules([
  { name: 'planner-answer', model: 'planner-model', lastUserIncludes: 'SLACK-QUESTION', times: 1,
    reply: { text: 'Planner on Slack: the API first, then the tests.' } },
  { name: 'planner-again', model: 'planner-model', lastUserIncludes: 'AFTER-RECONNECT', times: 1,
    reply: { text: 'Planner again, after the reconnect.' } },
  { name: 'planner-pass', model: 'planner-model', anyTurn: true, reply: { text: 'NO_REPLY' } },
  { name: 'reviewer-thread', model: 'reviewer-model', lastUserIncludes: 'THREAD-QUESTION', times: 1,
    reply: { text: 'Reviewer in the thread: the tests cover the API.' } },
  { name: 'reviewer-pass', model: 'reviewer-model', anyTurn: true, reply: { text: 'NO_REPLY' } },
  { name: 'coder-pass', model: 'coder-model', anyTurn: true, reply: { text: 'NO_REPLY' } },
]);

const byAgent = (all, a) => all.filter((m) => m.user === AGENTS[a].id);

// 1. A human mention of planner in #work.
const q = await say(`<@${AGENTS.planner.id}> SLACK-QUESTION: what comes first?`);
const qTs = q && (q.ts ?? (q.message && q.message.ts));
check('1: alice\'s message was stored at the fake', qTs, JSON.stringify(q));
const answer = await waitFor(async () => byAgent(await messages(), 'planner')[0], STEP_MS, 500);
check('1: planner answered in #work', answer && /^Planner on Slack/.test(answer.text) && !answer.thread_ts,
  `${JSON.stringify(answer)}\n    gateway log tail:\n${gwLogTail()}`);
const posts = (await requests()).filter((r) => r.method === 'chat.postMessage');
const post = posts.find((r) => r.token === AGENTS.planner.token && /^Planner on Slack/.test(r.args.text ?? ''));
check('1: through chat.postMessage with planner\'s bot token, to #work, answered ok',
  post && post.args.channel === WORK && post.ok === true && post.status === 200, JSON.stringify(posts));
// The other agents read planner's answer (bots see each other, as Dirigent
// needs): each ran its model on it and stayed silent.
const heard = await waitFor(async () => {
  const rs = await modelRequests();
  return ['reviewer', 'coder'].every((a) => rs.some((r) => r.model === `${a}-model` && /Planner on Slack/.test(r.lastUser)));
}, STEP_MS, 500);
check('1: reviewer and coder got planner\'s answer (a bot message, allowBots with an owner in the channel)', heard,
  fs.readFileSync(gwLog, 'utf8').split('\n').filter((l) => /drop bot message/.test(l)).slice(-4).join('\n    ') || 'no model call on it');
// Every app in #work got alice's message as a `message` event, planner an
// app_mention too; each acked.
const envQ = (await envelopes()).filter((e) => e.ts === qTs);
check('1: each agent app got alice\'s message as a `message` envelope and acked it',
  Object.values(AGENTS).every((u) => envQ.some((e) => e.appId === u.app && e.eventType === 'message' && e.connId > 0 && e.acked)),
  JSON.stringify(envQ));
check('1: only planner got an app_mention for it, and acked it',
  envQ.filter((e) => e.eventType === 'app_mention').map((e) => `${e.appId}:${e.acked}`).join() === `${AGENTS.planner.app}:true`,
  JSON.stringify(envQ));

// 2. A thread reply to planner's answer, mentioning reviewer.
if (answer) {
  await sleep(3000);
  await say(`<@${AGENTS.reviewer.id}> THREAD-QUESTION: do the tests cover it?`, answer.ts);
  const inThread = await waitFor(async () => byAgent(await messages(), 'reviewer')[0], STEP_MS, 500);
  check('2: reviewer answered inside the thread (thread_ts of the parent)',
    inThread && /^Reviewer in the thread/.test(inThread.text) && inThread.thread_ts === answer.ts,
    `${JSON.stringify(inThread)}\n    gateway log tail:\n${gwLogTail()}`);
}

// 3. Slack asks planner's app to reconnect: it opens a new websocket.
await sleep(3000);
const before = (await requests()).filter((r) => r.method === 'apps.connections.open' && r.token === AGENTS.planner.appToken).length;
const disc = await postJson(`${SOCKET}/_fake/socket/disconnect?app=${AGENTS.planner.app}&reason=refresh_requested`, {});
check('3: the fake sent planner\'s app a disconnect message', disc && disc.disconnected === 1, JSON.stringify(disc));
const reopened = await waitFor(async () => {
  const n = (await requests()).filter((r) => r.method === 'apps.connections.open' && r.token === AGENTS.planner.appToken).length;
  return n > before && (await connectedApps()).has(AGENTS.planner.app);
}, 120_000, 500);
check('3: planner\'s app called apps.connections.open again and has a websocket with its hello', reopened,
  JSON.stringify(await connections()));
if (reopened) {
  await sleep(2000);
  await say(`<@${AGENTS.planner.id}> AFTER-RECONNECT: still there?`);
  const again = await waitFor(async () => byAgent(await messages(), 'planner').find((m) => /after the reconnect/.test(m.text)), STEP_MS, 500);
  check('3: planner answers after the reconnect', again, gwLogTail());
}

// Let late runs finish before the final look.
await sleep(5000);

// ---- what happened, as the fake and the model saw it -------------------------------------

const all = await messages();
fs.writeFileSync(path.join(opt.work, 'transcript.json'), `${JSON.stringify(all, null, 2)}\n`);
const show = all.map((m) => `${nameOf(m.user)}${m.thread_ts && m.thread_ts !== m.ts ? ' (thread)' : ''}: ${String(m.text).slice(0, 80)}`).join('\n    ');
note(`#work:\n    ${show}`);
check('no silent or fallback text reached Slack (NO_REPLY, OpenClaw warnings)',
  all.every((m) => !LEAKS.some((re) => re.test(m.text ?? ''))), show);
check('coder never spoke, reviewer only in the thread, planner twice',
  byAgent(all, 'coder').length === 0 && byAgent(all, 'reviewer').length === 1 && byAgent(all, 'planner').length === 2, show);

const reqs = await modelRequests();
const byRule = {};
for (const r of reqs) byRule[r.rule] = (byRule[r.rule] ?? 0) + 1;
if (WITH_DIRIGENT) {
  const gl = fs.readFileSync(gwLog, 'utf8');
  check('the installed plugin draws no "can\'t verify where this plugin came from"',
    !/can't verify where this plugin came from. Review it with 'openclaw plugins inspect dirigent'/.test(gl), 'it does');
  // Dirigent manages Discord only: Slack's messages and replies pass its
  // hooks untouched (no cancelled reply, no hook error).
  const dg = gl.split('\n').filter((l) => /\[dirigent\]/.test(l));
  const cancelled = dg.filter((l) => /message_sending: cancelled/.test(l));
  check('Dirigent cancels no Slack reply (message_sending)', cancelled.length === 0, cancelled.slice(0, 4).join('\n    '));
  const hookErrors = dg.filter((l) => /hook \S+ returned OC_ERR|event\.channelId is missing/.test(l));
  check('Dirigent\'s hooks take Slack\'s events without an error', hookErrors.length === 0,
    `${hookErrors.length} lines, e.g.\n    ${[...new Set(hookErrors.map((l) => l.replace(/^\S+ /, '')))].slice(0, 4).join('\n    ')}`);
}
check('each answer ran once on the real model', ['planner-answer', 'reviewer-thread', 'planner-again'].every((r) => byRule[r] === 1),
  JSON.stringify(byRule));

const env = await envelopes();
const delivered = env.filter((e) => e.connId > 0);
check('every envelope delivered on a websocket was acked', delivered.length > 0 && delivered.every((e) => e.acked),
  JSON.stringify(delivered.filter((e) => !e.acked)));
const apiReqs = await requests();
const methods = {};
for (const r of apiReqs) {
  const m = (methods[r.method] ??= { n: 0, errors: [] });
  m.n += 1;
  if (r.ok === false && !m.errors.includes(r.error)) m.errors.push(r.error);
}
note(`Web API methods called: ${Object.entries(methods).map(([k, v]) =>
  `${k} x${v.n}${v.errors.length ? ` (errors: ${v.errors.join(', ')})` : ''}`).join(', ')}`);
check('OpenClaw\'s ack reaction on a mention reached the fake (reactions.add, ok)',
  apiReqs.some((r) => r.method === 'reactions.add' && r.ok === true && r.token === AGENTS.planner.token && r.args.timestamp === qTs),
  JSON.stringify(apiReqs.filter((r) => r.method.startsWith('reactions.')).map((r) => [r.token, r.args, r.ok, r.error])));
const unknown = apiReqs.filter((r) => r.error === 'unknown_method');
check('every Web API method the plugin called is served by the fake (no unknown_method)', unknown.length === 0,
  [...new Set(unknown.map((r) => r.method))].join(', '));

gw.kill('SIGTERM');
await waitFor(() => gwExited !== null, 60_000, 200);

// The session keys OpenClaw filed the Slack conversations under: each
// agent's sessions live in its SQLite store (session_nodes.session_key).
const keys = [];
for (const a of Object.keys(AGENTS)) {
  const file = path.join(home, '.openclaw', 'agents', a, 'agent', 'openclaw-agent.sqlite');
  try {
    const db = new DatabaseSync(file, { readOnly: true });
    for (const r of db.prepare('SELECT DISTINCT session_key AS k FROM session_nodes').all()) keys.push(r.k);
    db.close();
  } catch (e) {
    note(`cannot read the session keys of ${a} from ${file}: ${e.message}`);
  }
}
note(`session keys: ${keys.sort().join(', ') || '(none found)'}`);
const lc = WORK.toLowerCase();
check('session keys: agent:<id>:slack:channel:<channel id, lower case>, and :thread:<thread_ts> for the thread',
  keys.includes(`agent:planner:slack:channel:${lc}`) &&
  (!answer || keys.includes(`agent:reviewer:slack:channel:${lc}:thread:${answer.ts}`)), keys.join(', '));
const failed = summary();
console.log(`slack: ${((Date.now() - t0) / 1000).toFixed(1)} s in all; logs, config and transcript in ${opt.work}`);
cleanup();
process.exit(failed ? 1 : 0);
