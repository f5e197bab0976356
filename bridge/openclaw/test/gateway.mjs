// gateway.mjs -- the gateway stage of `make check-openclaw`: a real, long-lived
// `openclaw gateway run` with the official Discord channel plugin
// (@openclaw/discord), one bot account per agent, the bridge loading
// dirigent.so, against build/fake-discord (REST and gateway websocket on one
// loopback port) and the scripted model (model.mjs); no no-reply provider
// (OpenClaw 2026.9 has the claim hooks, the example config names none).
//
//   node gateway.mjs --build <abs build dir> --cache <npm cache dir>
//                    --work <scratch dir> --plugins <staged plugin parent dir>
//                    --home <HOME with @openclaw/discord installed>
//
// It plays the story of `make demo` (a human asks planner in #work; planner
// opens a private discussion with reviewer and coder; they speak in turn; a
// refused callback by a non-initiator; hand-offs; the idle reminder;
// planner's callback; the result in #work; planner goes on; the closed
// notice) and checks at the fake Discord and the scripted model:
//   - every message in order, by the right bot;
//   - real-model calls only for the speaker of each turn (the claim hooks
//     keep non-speakers from running at all; no no-reply model exists);
//   - no text of a non-speaker or of a silent run reaches Discord (no
//     NO_REPLY, no OpenClaw warning or fallback text);
//   - each inbound message is ingested once although three accounts report
//     it (the loop counter in `!dirigent status`);
//   - the moderator's messages start a real run only for the agent they hand
//     the turn to;
//   - `openclaw dirigent doctor` on this config and `openclaw dirigent
//     status | why` on the store the story left (the packaged dirigent-ctl).
// The OpenClaw config it writes is kept as <work>/openclaw.json.example: it
// is the setup README's checklist "Use it in OpenClaw" describes. Loopback only.
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import {
  getJson, postJson, waitFor, sleep, makeChecks, makeChildren, offlineEnv, modelEntry, writeConfig,
  freePort, speakersByMessage, costLedger, makeOpenclawCli,
} from './lib.mjs';

const opt = {};
for (let i = 2; i < process.argv.length; i += 2) opt[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['build', 'cache', 'work', 'plugins', 'home'])
  if (!opt[k]) {
    console.error(`gateway: --${k} is required`);
    process.exit(2);
  }
const NODE = process.execPath;
const OPENCLAW = path.join(opt.cache, 'node_modules', 'openclaw', 'openclaw.mjs');
const HERE = path.dirname(new URL(import.meta.url).pathname);
const STEP_MS = 180_000; // one step of the story on a loaded 2-core machine

const { check, note, summary } = makeChecks('gateway');
const { die, startServer, cleanup, children } = makeChildren('gateway');

// Snowflakes of the story.
const GUILD = '910000000000000001';
const WORK = '210000000000000001';
const HUMAN = { id: '110000000000000050', token: 'alice-token', name: 'alice' };
const MOD = { id: '110000000000000099', token: 'moderator-token', name: 'moderator' };
const AGENTS = {
  planner: { id: '110000000000000001', token: 'planner-token' },
  reviewer: { id: '110000000000000002', token: 'reviewer-token' },
  coder: { id: '110000000000000003', token: 'coder-token' },
};
const SUMMARY = 'plans/discussions/api-shape.md';
const nameOf = (id) => (id === HUMAN.id ? 'alice' : id === MOD.id ? 'moderator'
  : Object.keys(AGENTS).find((a) => AGENTS[a].id === id) ?? `?${id}`);

// Texts that must never reach Discord: silence, and what OpenClaw sends
// when a run ends without a visible answer or fails.
const LEAKS = [/NO_REPLY/i, /⚠️/, /couldn't (generate|produce)/i, /did not produce a visible reply/i,
  /something went wrong/i, /superseded/i, /SCRIPT-MISS/, /UNEXPECTED/];

// ---- servers --------------------------------------------------------------------------

fs.mkdirSync(opt.work, { recursive: true });
const fake = await startServer(opt.work, 'fake-discord', path.join(opt.build, 'fake-discord'), [
  '--guild', GUILD, '--heartbeat-ms', '5000',
  ...[MOD, ...Object.values(AGENTS)].map((u) => ['--user', `${u.token}=${u.id}`]).flat(),
]);
const model = await startServer(opt.work, 'model', NODE, [path.join(HERE, 'model.mjs'), '--record', path.join(opt.work, 'model-requests.jsonl')]);
for (const [n, u] of [['fake-discord', fake.url], ['model', model.url]])
  if (!u.startsWith('http://127.0.0.1:')) die(`${n} is not on loopback: ${u}`);
const FAKE = fake.url.replace(/\/api\/v10$/, '');
note(`fake Discord ${fake.url}, model ${model.url}`);

// Users and the work channel at the fake: bots with their names, one human.
for (const [name, u] of [['moderator', MOD], ...Object.entries(AGENTS)])
  await postJson(`${FAKE}/_fake/users`, { token: u.token, userId: u.id, bot: true, username: name });
await postJson(`${FAKE}/_fake/users`, { token: HUMAN.token, userId: HUMAN.id, bot: false, username: HUMAN.name });
await postJson(`${FAKE}/_fake/channels`, { id: WORK, name: 'work' });

const setRules = (rules) => postJson(`${model.url}/_script`, { rules });
const modelRequests = () => getJson(`${model.url}/_requests`);
const messages = (ch) => getJson(`${FAKE}/_fake/messages${ch ? `?channel=${ch}` : ''}`);
const channels = () => getJson(`${FAKE}/_fake/channels`);
const say = (channelId, content) => postJson(`${FAKE}/_fake/messages`, { channelId, authorId: HUMAN.id, content });

// ---- OpenClaw ------------------------------------------------------------------------

const home = opt.home;
const ws = Object.fromEntries(Object.keys(AGENTS).map((a) => [a, path.join(home, 'agents', a)]));
for (const d of Object.values(ws)) fs.mkdirSync(d, { recursive: true });
const gwPort = await freePort();

// The installed Discord plugin left its own entries in openclaw.json: keep
// them (plugins.entries.discord, meta) and add ours.
let installed = {};
try {
  installed = JSON.parse(fs.readFileSync(path.join(home, '.openclaw', 'openclaw.json'), 'utf8'));
} catch (e) {
  die(`${home}/.openclaw/openclaw.json is missing (was @openclaw/discord installed there?): ${e.message}`);
}
// The configuration README "Use it in OpenClaw" names and docs/configuration.md
// shows, verbatim
// (bridge/openclaw/example/openclaw.json; OpenClaw substitutes the
// ${VARS} from the environment), plus only what a test needs on top: the
// scripted models, loopback ports, the fake Discord's REST base for the
// moderator, no update checks. The plugin itself is the one run.sh installed
// from the package (make package) with `openclaw plugins install`.
const EXAMPLE = path.join(HERE, '..', 'example', 'openclaw.json');
// OpenClaw substitutes ${VARS} in values, not in keys: the guild's id is
// written into the file by hand (YOUR_GUILD_ID), as the README says.
const example = JSON.parse(fs.readFileSync(EXAMPLE, 'utf8').replaceAll('YOUR_GUILD_ID', GUILD));
const docRoot = path.join(HERE, '..', '..', '..');
const readme = fs.readFileSync(path.join(docRoot, 'README.md'), 'utf8');
const configDoc = fs.readFileSync(path.join(docRoot, 'docs', 'configuration.md'), 'utf8');
const squash = (t) => t.replace(/\s+/g, ' ').trim();
check('README "Use it in OpenClaw" names the configuration this stage runs',
  readme.includes('bridge/openclaw/example/openclaw.json'), 'README.md does not name bridge/openclaw/example/openclaw.json');
check('docs/configuration.md shows exactly the configuration this stage runs',
  squash(configDoc).includes(squash(fs.readFileSync(EXAMPLE, 'utf8'))), `docs/configuration.md lacks the text of ${EXAMPLE}`);
check('the example config names no no-reply provider (the claim hooks make it unneeded)',
  !('noReplyProvider' in example.plugins.entries.dirigent.config) && !example.models,
  JSON.stringify(example.plugins.entries.dirigent.config));
const exampleEnv = {
  HOME: home,
  DISCORD_GUILD_ID: GUILD,
  ADMIN_USER_ID: HUMAN.id,
  MODERATOR_USER_ID: MOD.id,
  DIRIGENT_MODERATOR_TOKEN: MOD.token,
  ...Object.fromEntries(Object.entries(AGENTS).flatMap(([a, u]) => [
    [`${a.toUpperCase()}_BOT_TOKEN`, u.token], [`${a.toUpperCase()}_USER_ID`, u.id]])),
};
const dirigentEntry = example.plugins.entries.dirigent;
const config = {
  ...installed,
  ...example,
  update: { checkOnStart: false },
  telemetry: { enabled: false },
  tools: { toolSearch: false },
  gateway: { mode: 'local', bind: 'loopback', port: gwPort, auth: { mode: 'token', token: 'gateway-test-token' } },
  models: {
    providers: {
      ...(example.models?.providers ?? {}),
      script: { baseUrl: model.url, apiKey: 'script-key', api: 'openai-completions',
        models: ['planner-model', 'reviewer-model', 'coder-model'].map(modelEntry) },
    },
  },
  agents: {
    ...example.agents,
    entries: Object.fromEntries(Object.entries(example.agents.entries).map(([a, e]) => [a, { ...e, model: `script/${a}-model` }])),
  },
  plugins: {
    ...(installed.plugins ?? {}),
    ...example.plugins,
    entries: {
      ...((installed.plugins && installed.plugins.entries) ?? {}),
      ...example.plugins.entries,
      dirigent: {
        ...dirigentEntry,
        config: {
          ...dirigentEntry.config,
          discord: { ...dirigentEntry.config.discord, apiBase: fake.url, timeoutMs: 5000 },
          // A step takes tens of seconds on a loaded machine: no turn may
          // be passed on by the timeout in between.
          turn: { timeoutSec: 3600 },
        },
      },
    },
  },
};
for (const a of Object.keys(AGENTS)) fs.mkdirSync(path.join(home, 'agents', a), { recursive: true });
writeConfig(home, config);
fs.writeFileSync(path.join(opt.work, 'openclaw.json.example'), `${JSON.stringify(config, null, 2)}\n`);

// One `openclaw gateway run`; started again for the thread phase.
let gw = null;
let gwExited = null;
let gwLog = null;
let gwRuns = 0;
// The gateway's last lines without its periodic chatter (a cron reconcile
// and a database check each minute filled the whole tail of a stalled run).
const GW_NOISE = /dreaming cron reconcile failed|database integrity verification passed/;
const gwLogTail = () => fs.readFileSync(gwLog, 'utf8').split('\n').filter((l) => !GW_NOISE.test(l)).join('\n').slice(-3000);

async function startGateway(extraEnv = {}) {
  gwRuns += 1;
  gwLog = path.join(opt.work, `gateway-${gwRuns}.log`);
  const gwFd = fs.openSync(gwLog, 'w');
  gwExited = null;
  gw = spawn(NODE, [OPENCLAW, 'gateway', 'run', '--port', String(gwPort), '--bind', 'loopback', '--verbose'], {
    cwd: home, stdio: ['ignore', gwFd, gwFd],
    env: {
      ...process.env, ...offlineEnv, ...exampleEnv,
      DISCORD_API_URL: fake.url,
      ...extraEnv,
    },
  });
  children.push(gw);
  gw.on('exit', (code, sig) => { gwExited = code ?? sig; });
  // All three bots logged in through the gateway websocket (this run's
  // sessions: the fake lists open sockets only).
  const up = await waitFor(async () => {
    if (gwExited !== null) return 'exited';
    try {
      const list = await getJson(`${FAKE}/_fake/gateway`);
      const ready = new Set((Array.isArray(list) ? list : list.sessions ?? []).filter((x) => x.identified).map((x) => x.userId));
      return Object.values(AGENTS).every((u) => ready.has(u.id)) ? 'ready' : null;
    } catch {
      return null;
    }
  }, 240_000, 500);
  if (!check(`gateway run ${gwRuns}: the three agent bots logged in to the fake Discord gateway (READY)`, up === 'ready',
    `${up ?? 'timeout'}; gateway log tail:\n${gwLogTail()}`)) {
    cleanup();
    process.exit(1);
  }
  const loaded = await waitFor(() => /dirigent\.so dirigent .* started/.test(fs.readFileSync(gwLog, 'utf8')), 60_000, 500);
  check(`gateway run ${gwRuns}: dirigent.so started inside the gateway (bridge)`, loaded, gwLogTail());
  // The Discord plugin finishes its own startup (commands, presence) after
  // READY; give it a moment so the first message is not raced.
  await sleep(3000);
}

async function stopGateway() {
  if (!gw || gwExited !== null) return;
  gw.kill('SIGTERM');
  const stopped = await waitFor(() => gwExited !== null, 60_000, 200);
  if (!stopped) gw.kill('SIGKILL');
  await waitFor(async () => {
    const list = await getJson(`${FAKE}/_fake/gateway`);
    return (Array.isArray(list) ? list : list.sessions ?? []).length === 0;
  }, 30_000, 200);
}

await startGateway();

// ---- the story ---------------------------------------------------------------------

const guide = 'Agree on the shape of the public API. Planner writes the summary and calls discuss-callback.';
await setRules([
  // planner
  { name: 'planner-open', model: 'planner-model', lastUserIncludes: 'OPEN-DISCUSSION', times: 1, reply: { toolCalls: [{
    name: 'discord_channel_create', arguments: { name: 'api-shape', participants: ['reviewer', 'coder'],
      callbackChannelId: WORK, discussGuide: guide } }] } },
  { name: 'planner-opened', model: 'planner-model', afterTool: 'discord_channel_create', times: 1,
    reply: { text: 'I opened a discussion with reviewer and coder; I will continue here when it reports back.' } },
  { name: 'planner-write', model: 'planner-model', lastUserIncludes: '[Discussion Idle]', times: 1, reply: { toolCalls: [{
    name: 'write', arguments: { path: SUMMARY, content: '# API shape\n\n## Decision\nOne entry point, versioned structs.\n' } }] } },
  { name: 'planner-callback', model: 'planner-model', afterTool: 'write', times: 1,
    reply: { toolCalls: [{ name: 'discuss-callback', arguments: { summaryPath: SUMMARY } }] } },
  { name: 'planner-closed', model: 'planner-model', afterTool: 'discuss-callback', times: 1, reply: { text: 'NO_REPLY' } },
  { name: 'planner-back', model: 'planner-model', lastUserIncludes: '[Discussion Result Ready]', times: 1,
    reply: { text: `Back on the task: the discussion is summarised in ${SUMMARY}.` } },
  { name: 'planner-pass', model: 'planner-model', anyTurn: true, reply: { text: 'NO_REPLY' } },
  // reviewer
  { name: 'reviewer-review', model: 'reviewer-model', lastUserIncludes: '[Discussion Started]', times: 1,
    reply: { text: 'Review: versioned structs behind one entry point.' } },
  { name: 'reviewer-thread', model: 'reviewer-model', lastUserIncludes: 'THREAD-QUESTION', times: 1,
    reply: { text: 'Thread answer: the ABI stays at v1; new hooks are added, never renamed.' } },
  { name: 'reviewer-pass', model: 'reviewer-model', anyTurn: true, reply: { text: 'NO_REPLY' } },
  // coder
  { name: 'coder-try-callback', model: 'coder-model', lastUserIncludes: 'Review:', times: 1,
    reply: { toolCalls: [{ name: 'discuss-callback', arguments: { summaryPath: 'notes.md' } }] } },
  { name: 'coder-impl', model: 'coder-model', afterTool: 'discuss-callback', times: 1,
    reply: { text: 'Implementation: only the initiator may close it (discuss-callback said OC_ERR_DENIED).' } },
  { name: 'coder-pass', model: 'coder-model', anyTurn: true, reply: { text: 'NO_REPLY' } },
]);

// 1. alice asks planner in #work; planner opens the discussion.
await say(WORK, `<@${AGENTS.planner.id}> OPEN-DISCUSSION with reviewer and coder about the API shape, please.`);
const disc = await waitFor(async () => (await channels()).find((c) => c.name === 'api-shape'), STEP_MS, 500);
check('1: planner opened the private discussion channel', disc, `channels: ${JSON.stringify((await channels()).map((c) => c.name))}; log tail:\n${gwLogTail()}`);
const D = disc && disc.id;
const opened = await waitFor(async () => (await messages(WORK)).find((m) => m.author.id === AGENTS.planner.id), STEP_MS, 500);
check('1: planner answered in #work through its own bot', opened && /opened a discussion/.test(opened.content), JSON.stringify(opened));

if (D) {
  // 2. The discussion runs: kickoff, review, refused callback + implementation,
  // hand-offs, idle reminder, planner's callback, result in #work.
  const result = await waitFor(async () => (await messages(WORK)).find((m) => m.author.id === MOD.id && m.content.includes('[Discussion Result Ready]')),
    4 * STEP_MS, 1000);
  check('2: the discussion ended with the result in #work', result && result.content.includes(SUMMARY) && result.content.includes(`<@${AGENTS.planner.id}>`),
    result ? result.content : `no result; #discussion so far:\n${(await messages(D)).map((m) => `${nameOf(m.author.id)}: ${m.content.slice(0, 80)}`).join('\n')}\nlog tail:\n${gwLogTail()}`);
  // Without the result nothing after it can come: no waiting for it (a
  // failed story must not hold CI for the stage's whole time limit).
  const back = result && await waitFor(async () => (await messages(WORK)).find((m) => m.author.id === AGENTS.planner.id && m.content.startsWith('Back on the task')), STEP_MS, 500);
  check('2: planner went on in #work after the result', back, 'no "Back on the task" from planner');
  check('2: the summary is in the planner workspace', fs.existsSync(path.join(ws.planner, SUMMARY)), path.join(ws.planner, SUMMARY));

  // 3. A late human word in the closed channel gets the closed notice.
  await say(D, 'One more thought: should the structs be versioned by size?');
  const closed = result && await waitFor(async () => (await messages(D)).find((m) => m.author.id === MOD.id && m.content.includes('[Channel Closed]')), STEP_MS, 500);
  check('3: the closed channel answers with the closed notice', closed, 'no [Channel Closed]');
}

// 4. The loop counter of #work: each inbound message counted once although
// three accounts reported it.
await sleep(3000);
await say(WORK, '!dirigent status');
const status = await waitFor(async () => (await messages(WORK)).find((m) => m.author.id === MOD.id && /agent messages: \d+/.test(m.content)), STEP_MS, 500);
const counted = status && Number(/agent messages: (\d+)/.exec(status.content)[1]);
// planner wrote two messages in #work since alice's question (a silent
// round may reset the count in between); three accounts report each, so
// counting per report would show at least 3.
check('4: #work counted each of planner\'s messages once (ingested once per message, not once per account)',
  counted >= 1 && counted <= 2, status ? status.content : 'no status reply');

// 5. sessionPolicy "thread" (switched by the environment, no config
// change): a Discord thread in #work is a conversation of its own.
await stopGateway();
await startGateway({ DIRIGENT_SESSION_POLICY: 'thread' });
const thread = await postJson(`${FAKE}/_fake/threads`, { channelId: WORK, name: 'abi-question', ownerId: HUMAN.id });
const T = thread && (thread.id ?? (thread.thread && thread.thread.id));
check('5: a thread was opened in #work', T, JSON.stringify(thread));
if (T) {
  await postJson(`${FAKE}/_fake/messages`, { threadId: T, authorId: HUMAN.id,
    content: `<@${AGENTS.reviewer.id}> THREAD-QUESTION: is the ABI frozen?` });
  const answer = await waitFor(async () => (await messages(T)).find((m) => m.author.id === AGENTS.reviewer.id), STEP_MS, 500);
  check('5: reviewer answered inside the thread', answer && /^Thread answer/.test(answer.content), JSON.stringify(answer));
  await sleep(3000);
  await postJson(`${FAKE}/_fake/messages`, { threadId: T, authorId: HUMAN.id, content: '!dirigent status' });
  const st = await waitFor(async () => (await messages(T)).find((m) => m.author.id === MOD.id && /agent messages: \d+/.test(m.content)), STEP_MS, 500);
  // OpenClaw keeps a Discord thread as a session of its own; its turns are
  // its own too: the status in the thread counts only the thread's message.
  check('5: the thread is a conversation of its own (its status counts only its own agent message)',
    st && /policy: thread/.test(st.content) && /agent messages: 1\//.test(st.content),
    st ? st.content : 'no status reply in the thread');
  // 6. The owner commands through the bridge's ABI 1.1 host calls (OpenClaw's
  // plugin SDK): rotate ends the thread's sessions (OpenClaw deletes the
  // entries, transcripts archived: the bridge logs each outcome); cancel
  // finds nothing to abort (the thread is quiet by now). Either one saying
  // "not supported by this host" means the bridge did not offer the call.
  await postJson(`${FAKE}/_fake/messages`, { threadId: T, authorId: HUMAN.id, content: '!dirigent rotate' });
  // Admin replies start with "Dirigent (admin): ".
  const rot = await waitFor(async () => (await messages(T)).find((m) => m.author.id === MOD.id && /: rotate/.test(m.content)), STEP_MS, 500);
  check('6: !dirigent rotate in the thread reset its sessions through OpenClaw (session_reset)',
    rot && /: rotated [1-9]\d* session\(s\) of /.test(rot.content), rot ? rot.content : 'no rotate reply');
  const ended = await waitFor(() => /session_reset agent:[^ ]+: session \S+ ended \(transcript archived\)/.test(fs.readFileSync(gwLog, 'utf8')), STEP_MS, 500);
  check('6: OpenClaw deleted the rotated session entry (the bridge logged the outcome)', ended,
    fs.readFileSync(gwLog, 'utf8').split('\n').filter((l) => /session_reset/.test(l)).join('\n    ') || 'no session_reset line in the gateway log');
  await postJson(`${FAKE}/_fake/messages`, { threadId: T, authorId: HUMAN.id, content: '!dirigent cancel' });
  const can = await waitFor(async () => (await messages(T)).find((m) => m.author.id === MOD.id && /(cancel|run)/.test(m.content) && !/: rotated/.test(m.content)), STEP_MS, 500);
  // Whether a speaker holds the turn then depends on timing (a hand-off may
  // be under way): "nobody holds the turn" is decided before the host call,
  // "no run in flight" / "aborted" come from OpenClaw's run registry.
  check('6: !dirigent cancel is offered by the bridge (run_abort; not "not supported by this host")',
    can && /(no run in flight|there is no run to cancel|run was aborted)/.test(can.content), can ? can.content : 'no cancel reply');
}

// Let late runs finish before the final look.
await sleep(5000);

// ---- what happened, as the fake and the model saw it -------------------------------------

const all = await messages();
const transcript = (ch) => all.filter((m) => m.channel_id === ch).map((m) => ({ from: nameOf(m.author.id), content: m.content }));
const show = (t) => t.map((m) => `${m.from}: ${m.content.replace(/\s+/g, ' ').slice(0, 90)}`).join('\n    ');
fs.writeFileSync(path.join(opt.work, 'transcript.json'), `${JSON.stringify(all, null, 2)}\n`);

const leaks = all.filter((m) => LEAKS.some((re) => re.test(m.content)) && m.author.id !== MOD.id);
check('no silent or fallback text reached Discord (NO_REPLY, OpenClaw warnings)', leaks.length === 0,
  leaks.map((m) => `${nameOf(m.author.id)} in ${m.channel_id}: ${m.content.slice(0, 120)}`).join('\n    '));

// The expected order of each channel: [from, pattern].
// A bare mention by the moderator is a hand-off (the turn reached an agent
// that had already seen the latest message): allowed anywhere.
const isHandoff = (m) => m.from === 'moderator' && /^(<@\d+>\s*)+$/.test(m.content);
function inOrder(name, got, want) {
  let i = 0;
  for (const m of got) if (i < want.length && m.from === want[i][0] && want[i][1].test(m.content)) i += 1;
  const extra = got.filter((m) => !isHandoff(m) && !want.some(([f, re]) => f === m.from && re.test(m.content)));
  check(name, i === want.length && extra.length === 0,
    `matched ${i}/${want.length}; unexpected: ${JSON.stringify(extra)}\n    got:\n    ${show(got)}`);
}
inOrder('#work: every message in order, by the right bot', transcript(WORK), [
  ['alice', /OPEN-DISCUSSION/],
  ['planner', /opened a discussion/],
  ['moderator', /\[Discussion Result Ready\]/],
  ['planner', /^Back on the task/],
  ['alice', /^!dirigent status/],
  ['moderator', /agent messages:/],
]);
if (T) {
  inOrder('thread in #work: every message in order, by the right bot', transcript(T), [
    ['alice', /THREAD-QUESTION/],
    ['reviewer', /^Thread answer/],
    ['alice', /^!dirigent status/],
    ['moderator', /agent messages:/],
    ['alice', /^!dirigent rotate/],
    ['moderator', /: rotated/],
    ['alice', /^!dirigent cancel/],
    ['moderator', /(no run in flight|no run to cancel|run was aborted)/],
  ]);
  // OpenClaw hands message_received the text with <@id> rendered as
  // @name: the plugin must still see whom alice asked, so reviewer takes
  // the turn at once (no other agent runs first and hands it on).
  // Hand-offs after reviewer's answer are the rotation going on.
  const inThread = transcript(T);
  const answered = inThread.findIndex((m) => m.from === 'reviewer');
  const handoffs = inThread.slice(0, answered < 0 ? inThread.length : answered).filter(isHandoff);
  check('5: alice\'s @mention (rendered as @name by OpenClaw) gave reviewer the turn at once (no hand-off before its answer)',
    answered >= 0 && handoffs.length === 0, show(inThread));
}
if (D) {
  inOrder('#api-shape: every message in order, by the right bot', transcript(D), [
    ['moderator', /\[Discussion Started\]/],
    ['reviewer', /^Review:/],
    ['coder', /^Implementation:.*OC_ERR_DENIED/],
    ['moderator', /\[Discussion Idle\]/],
    ['alice', /One more thought/],
    ['moderator', /\[Channel Closed\]/],
  ]);
}

const reqs = await modelRequests();
fs.writeFileSync(path.join(opt.work, 'model-summary.json'), `${JSON.stringify(reqs.map((q) => ({ model: q.model, rule: q.rule })), null, 1)}\n`);
check('every real-model call matched a rule of the story', reqs.every((q) => q.rule !== null),
  reqs.filter((q) => q.rule === null).map((q) => `${q.model}: ${q.lastUser.slice(0, 100)}`).join('\n    '));
const byRule = {};
for (const q of reqs) byRule[q.rule] = (byRule[q.rule] ?? 0) + 1;
check('each step of the story ran once on the real model', ['planner-open', 'planner-opened', 'planner-write',
  'planner-callback', 'planner-back', 'reviewer-review', 'coder-try-callback', 'coder-impl', 'reviewer-thread'].every((r) => byRule[r] === 1),
JSON.stringify(byRule));
const { byMessage, interleaved } = speakersByMessage(reqs);
check('real-model calls only for the speaker: agents take turns on each message, never interleave',
  byMessage.size > 0 && interleaved.length === 0,
  `${byMessage.size} messages answered; interleaved: ${JSON.stringify(interleaved)}`);
check('every model call went to an agent\'s real model (no no-reply model is configured or asked)',
  reqs.length > 0 && reqs.every((q) => /^(planner|reviewer|coder)-model$/.test(q.model)),
  [...new Set(reqs.map((q) => q.model))].join(', '));

await stopGateway(); // and wait for it: its files are removed next

// Dirigent's cost ledger against what the scripted model saw (lib.mjs).
{
  // Every call the model saw until the gateway stopped: a run still going
  // when the story's checks read the requests above reports its call to the
  // ledger before the stop, so the two are compared at the same moment.
  const ledger = costLedger(path.join(home, '.openclaw', 'dirigent', 'dirigent.db'), await modelRequests());
  check('cost ledger: every model call OpenClaw reports, each on a run Dirigent let through, tokens counted, claimed runs recorded',
    ledger.ok, ledger.detail);
}

// ---- openclaw dirigent ...: the operator's commands -------------------------------------
// The installed package's dirigent-ctl, run by the bridge with the config
// OpenClaw resolved: the doctor against the fake Discord, then the store the
// story left behind.
const openclawCli = makeOpenclawCli({ node: NODE, openclaw: OPENCLAW, home, env: { ...process.env, ...offlineEnv, ...exampleEnv },
  children, logFile: path.join(opt.work, 'openclaw-dirigent.log') });
const hasLine = (text, level, needle) => text.split('\n').some((l) => l.startsWith(`${level} `) && l.includes(needle));
const tokensIn = (text) => [MOD, ...Object.values(AGENTS)].filter((u) => text.includes(u.token)).map((u) => u.token);

// The moderator's role: discussions need Manage Channels and Manage Roles.
await postJson(`${FAKE}/_fake/roles`, { id: '910000000000000077', name: 'dirigent',
  permissions: String((1n << 4n) | (1n << 28n)), members: [MOD.id] });
const doc = await openclawCli(['dirigent', 'doctor']);
check('openclaw dirigent doctor: no error on the README config (exit 0), tokens and permissions checked at Discord',
  doc.code === 0 && /0 errors/.test(doc.text) &&
  hasLine(doc.text, 'ok', `moderator: the token of env DIRIGENT_MODERATOR_TOKEN is valid and belongs to bot moderator (${MOD.id})`) &&
  Object.keys(AGENTS).every((a) => hasLine(doc.text, 'ok', `${a}: the token of channels.discord.accounts.${a}.token is valid`)) &&
  hasLine(doc.text, 'ok', 'plugins.entries.dirigent.hooks.allowConversationAccess is true') &&
  hasLine(doc.text, 'ok', 'plugin config: valid (the plugin\'s own validation): 3 agents') &&
  hasLine(doc.text, 'ok', 'has the claim hooks') &&
  hasLine(doc.text, 'ok', 'no-reply provider: none configured, none needed (claim hooks)') &&
  hasLine(doc.text, 'ok', `channel #work (${WORK}): the moderator and 3 agents`) &&
  hasLine(doc.text, 'ok', 'discussions: the moderator has Manage Channels and Manage Roles') &&
  hasLine(doc.text, 'ok', 'is dirigent\'s database, writable'),
  `exit ${doc.code}:\n${doc.text.slice(-4000)}`);
check('openclaw dirigent doctor prints no token', tokensIn(doc.text).length === 0, 'a token was printed');
const docBad = await openclawCli(['dirigent', 'doctor'], { DIRIGENT_MODERATOR_TOKEN: '' });
check('openclaw dirigent doctor without the moderator token: exit 1, the error and its fix',
  docBad.code === 1 && hasLine(docBad.text, 'error', 'moderator: no Discord token') &&
  docBad.text.includes('fix: export DIRIGENT_MODERATOR_TOKEN'), `exit ${docBad.code}:\n${docBad.text.slice(-3000)}`);
const st = await openclawCli(['dirigent', 'status']);
const scopes = /^scopes +(\d+) \(speaking/m.exec(st.text);
check('openclaw dirigent status: the running gateway\'s store (scopes, discussions, outbox)',
  st.code === 0 && scopes && Number(scopes[1]) >= 1 && /^discussions +\d+\+? active$/m.test(st.text) &&
  /^outbox +pending \d+, sent \d+, failed \d+/m.test(st.text), `exit ${st.code}:\n${st.text.slice(-3000)}`);
const stJson = await openclawCli(['dirigent', 'status', '--json']);
let parsed = null;
try { parsed = JSON.parse(stJson.text.slice(stJson.text.indexOf('{'))); } catch { /* checked below */ }
check('openclaw dirigent status --json: the same as JSON', stJson.code === 0 && parsed && parsed.scopes.total >= 1 &&
  parsed.outbox.sent >= 1, `exit ${stJson.code}:\n${stJson.text.slice(-3000)}`);
const why = await openclawCli(['dirigent', 'why', WORK, 'reviewer']);
check('openclaw dirigent why WORK reviewer: transitions and what reviewer gets (claimed or its turn), ending in a newline',
  why.code === 0 && why.text.includes(`channel ${WORK}, newest first`) &&
  /reviewer('s runs are claimed \(no model call\)| gets a real model run)/.test(why.text) && why.text.endsWith('\n'),
  `exit ${why.code}:\n${why.text.slice(-3000)}`);
const whyName = await openclawCli(['dirigent', 'why', 'work']);
check('openclaw dirigent why work (a name): refused naming the rule',
  whyName.code === 2 && whyName.text.includes('is not a channel id: it must be a Discord snowflake'),
  `exit ${whyName.code}:\n${whyName.text.slice(-2000)}`);
const failed = summary();
console.log(`gateway: logs, config and transcript in ${opt.work}`);
cleanup();
process.exit(failed ? 1 : 0);
