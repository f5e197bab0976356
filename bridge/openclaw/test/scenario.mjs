// scenario.mjs -- real `openclaw agent --local` turns with the bridge loaded.
//
//   node scenario.mjs --build <abs build dir> --cache <npm cache dir>
//                     --work <scratch dir> --plugins <staged plugin parent dir>
//
// Starts build/fake-discord, build/dirigent-noreply (with a bearer token)
// and model.mjs (the scripted "real model", which records every request),
// writes an OpenClaw config into a temporary HOME and plays:
//   A. probe turn (fixture plugin bridge_probe.so through the same bridge):
//      tool context, hook context and results, appendSystemContext reaching
//      the model, host calls from the plugin's threads, clean one-shot stop.
//   B. the discussion story (dirigent.so), the path a user takes: open a
//      discussion, let the agents take turns in it, close it with a result:
//      1. planner in the work channel calls discord_channel_create in
//         discussion mode -> fake Discord: private channel + kickoff;
//      2. reviewer's first turn after the kickoff holds the turn (real
//         model); its next turn in the discussion channel -> dirigent-noreply
//         receives it, the real model does not;
//      3. planner writes a summary into its workspace and calls
//         discuss-callback -> closed; the work channel gets the result with
//         the path;
//      4. a later reviewer turn there -> still dirigent-noreply.
// Every check reads what the servers recorded. Prints one line per check and
// exits 1 when any failed. Loopback only: every server binds 127.0.0.1.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import {
  getJson, waitFor, makeChecks, makeChildren, offlineEnv, modelEntry, writeConfig,
} from './lib.mjs';

const opt = {};
for (let i = 2; i < process.argv.length; i += 2) opt[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['build', 'cache', 'work', 'plugins'])
  if (!opt[k]) {
    console.error(`scenario: --${k} is required`);
    process.exit(2);
  }
const NODE = process.execPath;
const OPENCLAW = path.join(opt.cache, 'node_modules', 'openclaw', 'openclaw.mjs');
const HERE = path.dirname(new URL(import.meta.url).pathname);
const TURN_TIMEOUT_MS = 300_000;

// Snowflakes of the story.
const GUILD = '900000000000000001';
const WORK_CHANNEL = '200000000000000001';
const USERS = {
  moderator: { id: '100000000000000099', token: 'moderator-token' },
  planner: { id: '100000000000000001', token: 'planner-token' },
  reviewer: { id: '100000000000000002', token: 'reviewer-token' },
};
const NOREPLY_TOKEN = 'noreply-secret';
const SUMMARY = 'plans/discussions/api-shape.md';

// ---- bookkeeping ------------------------------------------------------------------

const { check, note, summary } = makeChecks('scenario');
const { children, cleanup, die, startServer: startIn } = makeChildren('scenario');
const startServer = (name, cmd, args, env) => startIn(opt.work, name, cmd, args, env);

let turnNo = 0;
function turn(home, agent, sessionKey, message) {
  turnNo += 1;
  const base = path.join(opt.work, `turn${turnNo}-${agent}`);
  const outFd = fs.openSync(`${base}.stdout`, 'w');
  const errFd = fs.openSync(`${base}.stderr`, 'w');
  const args = [OPENCLAW, 'agent', '--local', '--agent', agent, '--session-key', sessionKey, '--message', message, '--json'];
  const t0 = Date.now();
  const proc = spawn(NODE, args, { cwd: home, stdio: ['ignore', outFd, errFd],
    env: { ...process.env, ...offlineEnv, HOME: home } });
  children.push(proc);
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), TURN_TIMEOUT_MS);
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      fs.closeSync(outFd);
      fs.closeSync(errFd);
      const stdout = fs.readFileSync(`${base}.stdout`, 'utf8');
      const stderr = fs.readFileSync(`${base}.stderr`, 'utf8');
      const ms = Date.now() - t0;
      note(`turn ${turnNo}: ${agent} in ${sessionKey}: exit ${code ?? signal} after ${(ms / 1000).toFixed(1)} s (${base}.*)`);
      resolve({ code, signal, stdout, stderr, ms, files: base });
    });
  });
}

function stopReason(t) {
  const m = /"stopReason":\s*"([a-z_]+)"/.exec(t.stdout);
  return m ? m[1] : null;
}
function loadFailure(t) {
  const m = /([^\n]*(?:failed to load|refused to start|cannot find dirigent\.so|Plugin .* failed)[^\n]*)/i.exec(t.stderr);
  return m ? m[1].slice(0, 400) : null;
}

// ---- servers ---------------------------------------------------------------------------

fs.mkdirSync(opt.work, { recursive: true });
const fake = await startServer('fake-discord', path.join(opt.build, 'fake-discord'), [
  '--guild', GUILD, '--channel', WORK_CHANNEL,
  ...Object.values(USERS).map((u) => ['--user', `${u.token}=${u.id}`]).flat(),
]);
const noreply = await startServer('dirigent-noreply', path.join(opt.build, 'dirigent-noreply'),
  ['--token', NOREPLY_TOKEN]);
const model = await startServer('model', NODE, [path.join(HERE, 'model.mjs'), '--record', path.join(opt.work, 'model-requests.jsonl')]);
const FAKE = fake.url.replace(/\/api\/v10$/, '');
for (const [n, u] of [['fake-discord', fake.url], ['dirigent-noreply', noreply.url], ['model', model.url]])
  if (!u.startsWith('http://127.0.0.1:')) die(`${n} is not on loopback: ${u}`);
note(`fake Discord ${fake.url}, no-reply ${noreply.url}, model ${model.url}`);

const setRules = (rules) => getJson(`${model.url}/_script`, { method: 'POST', body: JSON.stringify({ rules }) });
const modelRequests = () => getJson(`${model.url}/_requests`);
const noreplyCalls = () => fs.readFileSync(noreply.errFile, 'utf8').split('\n')
  .filter((l) => /POST \/v1\/chat\/completions -> 200/.test(l));
const fakeMessages = (ch) => getJson(`${FAKE}/_fake/messages${ch ? `?channel=${ch}` : ''}`);
const fakeRequests = () => getJson(`${FAKE}/_fake/requests`);
const fakeChannels = () => getJson(`${FAKE}/_fake/channels`);

const providers = {
  script: { baseUrl: model.url, apiKey: 'script-key', api: 'openai-completions',
    models: ['planner-model', 'reviewer-model', 'probe-model'].map(modelEntry) },
  noreply: { baseUrl: noreply.url, apiKey: NOREPLY_TOKEN, api: 'openai-completions', models: [modelEntry('no-reply')] },
};
const commonConfig = {
  update: { checkOnStart: false },
  telemetry: { enabled: false },
  tools: { toolSearch: false },
  models: { providers },
};

// ---- A. probe turn ------------------------------------------------------------------------

async function probeTurn() {
  const home = path.join(opt.work, 'home-probe');
  const ws = path.join(home, 'ws-planner');
  fs.mkdirSync(ws, { recursive: true });
  writeConfig(home, {
    ...commonConfig,
    agents: { entries: { planner: { workspace: ws, model: 'script/probe-model' } } },
    plugins: {
      load: { paths: [path.join(opt.plugins, 'bridge_probe')] },
      entries: { bridge_probe: { enabled: true, hooks: { allowConversationAccess: true, allowPromptInjection: true },
        config: { threads: 1, tickMs: 2, bridge: { soPath: path.join(opt.build, 'tests', 'plugins', 'bridge_probe.so'),
          stateFile: path.join(home, 'probe-sessions.jsonl'), settleMs: 200 } } } },
    },
  });
  await setRules([
    { model: 'probe-model', lastUserIncludes: 'PROBE-TURN', reply: { toolCalls: [{ name: 'probe_echo', arguments: { text: 'héllo "q" 🎵' } }] } },
    { model: 'probe-model', afterTool: 'probe_echo', reply: { toolCalls: [{ name: 'probe_stats', arguments: {} }] } },
    { model: 'probe-model', afterTool: 'probe_stats', reply: { text: 'probe done' } },
  ]);
  const before = (await modelRequests()).length;
  const key = 'agent:planner:discord:channel:111:thread:222';
  const t = await turn(home, 'planner', key, 'PROBE-TURN: call the probe tools');
  const reqs = (await modelRequests()).slice(before);
  const lf = loadFailure(t);
  check('probe: the bridge loads in OpenClaw and the turn ends', t.code === 0 && !lf,
    `exit ${t.code}${lf ? `; ${lf}` : ''}; stderr tail: ${t.stderr.slice(-800)}`);
  check('probe: the model saw the plugin tools', reqs[0] && ['probe_echo', 'probe_fail', 'probe_stats'].every((n) => reqs[0].tools.includes(n)),
    `tools offered: ${reqs[0] ? reqs[0].tools.join(',') : 'no request'}`);
  check('probe: appendSystemContext from before_prompt_build reached the system prompt',
    reqs[0] && reqs[0].system.includes('probe-context'), 'system prompt lacks "probe-context"');
  const echo = reqs.find((r) => r.afterTool === 'probe_echo');
  let echoed = null;
  try { echoed = JSON.parse(echo.lastToolResult); } catch { /* checked below */ }
  check('probe: tool params arrive unchanged', echoed && echoed.params && echoed.params.text === 'héllo "q" 🎵',
    `tool result seen by the model: ${echo ? echo.lastToolResult : 'none'}`);
  const c = echoed && echoed.ctx;
  check('probe: tool context under the ABI names, channel and thread from the session key',
    c && c.agentId === 'planner' && c.sessionKey === key && c.channelId === '111' && c.threadId === '222' &&
    c.workspaceDir === ws && typeof c.sessionId === 'string' && c.senderIsOwner === true, JSON.stringify(c));
  const st = reqs.find((r) => r.afterTool === 'probe_stats');
  let stats = null;
  try { stats = JSON.parse(st.lastToolResult); } catch { /* checked below */ }
  const bmr = stats && stats.seen && stats.seen.before_model_resolve;
  check('probe: before_model_resolve context renamed (channelId/threadId/messageProvider)',
    bmr && bmr.ctx.agentId === 'planner' && bmr.ctx.sessionKey === key && bmr.ctx.channelId === '111' &&
    bmr.ctx.threadId === '222' && bmr.ctx.messageProvider === 'discord' && bmr.ctx.workspaceDir === ws &&
    /PROBE-TURN/.test(bmr.event.prompt || ''), JSON.stringify(bmr));
  check('probe: before_model_resolve ran once for the run (one registry dispatches, not one per registration)',
    bmr && bmr.calls === 1, `calls: ${bmr && bmr.calls}`);
  check('probe: before_prompt_build called', stats && stats.seen && stats.seen.before_prompt_build, JSON.stringify(stats && stats.seen));
  check('probe: plugin threads called log/session_patch/sessions_list during the turn',
    stats && stats.ticks > 0 && stats.patches > 0 && stats.lists > 0, JSON.stringify(stats && { t: stats.ticks, p: stats.patches, l: stats.lists }));
  check('probe: one-shot run shut the plugin down cleanly before exit', /bridge_probe: stopped after \d+ ticks/.test(t.stdout + t.stderr),
    'no "bridge_probe: stopped after" line in the turn output');
  check('probe: every model request matched a script rule', reqs.length > 0 && reqs.every((r) => r.rule !== null), reqs.map((r) => r.reply.text).join(' | '));
}

// ---- A2. decide turn: the bridge's ABI 1.2 decide in real OpenClaw ---------------------------
// The fixture's probe_decide calls decide from two plugin threads; the
// bridge asks api.runtime.decisions.evaluate, which OpenClaw routes to the
// test provider decisions-plugin/ (api.registerDecisionProvider) selected
// by agents.defaults.decisionModel; the provider answers from its script.

async function decideTurn() {
  const home = path.join(opt.work, 'home-decide');
  const ws = path.join(home, 'ws-planner');
  fs.mkdirSync(ws, { recursive: true });
  const script = path.join(home, 'decide-script.json');
  const record = path.join(home, 'decide-record.jsonl');
  fs.writeFileSync(script, JSON.stringify({ default: 'miss', rules: [
    { name: 'evidence', contextIncludes: 'DECIDE-EVIDENCE', label: 'reviewer', probability: 0.8 }] }));
  writeConfig(home, {
    ...commonConfig,
    agents: { defaults: { decisionModel: 'scripted-decisions/judge' },
      entries: { planner: { workspace: ws, model: 'script/probe-model' } } },
    plugins: {
      load: { paths: [path.join(opt.plugins, 'bridge_probe'), path.join(HERE, 'decisions-plugin')] },
      entries: {
        bridge_probe: { enabled: true, hooks: { allowConversationAccess: true, allowPromptInjection: true },
          config: { threads: 1, tickMs: 2, bridge: { soPath: path.join(opt.build, 'tests', 'plugins', 'bridge_probe.so'),
            stateFile: path.join(home, 'probe-sessions.jsonl'), settleMs: 200 } } },
        'scripted-decisions': { enabled: true, config: { script, record } },
      },
    },
  });
  const request = { question: 'Who should speak next, or nobody?', labels: ['planner', 'reviewer', 'nobody'],
    context: 'alice: DECIDE-EVIDENCE which database?\nplanner: SQLite.', timeoutMs: 20000 };
  await setRules([
    { model: 'probe-model', lastUserIncludes: 'DECIDE-TURN', reply: { toolCalls: [{ name: 'probe_decide', arguments: { request, threads: 2 } }] } },
    { model: 'probe-model', afterTool: 'probe_decide', reply: { text: 'decide done' } },
  ]);
  const before = (await modelRequests()).length;
  const t = await turn(home, 'planner', 'agent:planner:discord:channel:111', 'DECIDE-TURN: ask the judge');
  const reqs = (await modelRequests()).slice(before);
  const lf = loadFailure(t);
  check('decide: the turn with the probe and the test decision provider ends', t.code === 0 && !lf,
    `exit ${t.code}${lf ? `; ${lf}` : ''}; stderr tail: ${t.stderr.slice(-800)}`);
  const r = reqs.find((q) => q.afterTool === 'probe_decide');
  let got = null;
  try { got = JSON.parse(r.lastToolResult); } catch { /* checked below */ }
  const want = { status: 0, answer: { label: 'reviewer', probability: 0.8, source: 'openclaw:scripted-decisions/judge' } };
  check('decide: offered, and both plugin threads got the provider\'s answer through api.runtime.decisions.evaluate',
    got && got.offered === true && got.results.length === 2 && got.results.every((x) => x.status === want.status &&
      x.answer.label === want.answer.label && x.answer.probability === want.answer.probability &&
      x.answer.source === want.answer.source && x.answer.tokensIn > 0 && x.answer.tokensOut > 0),
    `tool result seen by the model: ${r ? r.lastToolResult : 'none'}`);
  const rec = fs.existsSync(record) ? fs.readFileSync(record, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  check('decide: the provider saw the evidence and the labels, twice', rec.length === 2 &&
    rec.every((x) => x.answers[0].labels.join() === 'planner,reviewer,nobody' && /DECIDE-EVIDENCE/.test(JSON.stringify(x))),
    JSON.stringify(rec).slice(0, 800));
}

// ---- B. the discussion story -------------------------------------------------------------

async function story() {
  const home = path.join(opt.work, 'home');
  const ws = { planner: path.join(home, 'ws-planner'), reviewer: path.join(home, 'ws-reviewer') };
  for (const d of Object.values(ws)) fs.mkdirSync(d, { recursive: true });
  const dirigentConfig = {
    noReplyProvider: 'noreply',
    noReplyModel: 'no-reply',
    dbPath: path.join(home, 'state', 'dirigent.db'),
    discord: { apiBase: fake.url, guildId: GUILD, moderatorToken: USERS.moderator.token, moderatorUserId: USERS.moderator.id, timeoutMs: 5000 },
    agents: { planner: { discordUserId: USERS.planner.id }, reviewer: { discordUserId: USERS.reviewer.id } },
    // One CLI turn takes 30-60 s on a loaded 2-core machine: a turn timeout
    // must not hand the turn on between two steps of the story.
    turn: { timeoutSec: 3600 },
    bridge: { soPath: path.join(opt.build, 'dirigent.so') },
  };
  fs.mkdirSync(path.join(home, 'state'), { recursive: true });
  writeConfig(home, {
    ...commonConfig,
    agents: { ownership: 'explicit', entries: {
      planner: { workspace: ws.planner, model: 'script/planner-model' },
      reviewer: { workspace: ws.reviewer, model: 'script/reviewer-model' },
    } },
    plugins: {
      load: { paths: [path.join(opt.plugins, 'dirigent')] },
      entries: { dirigent: { enabled: true, hooks: { allowConversationAccess: true, allowPromptInjection: true }, config: dirigentConfig } },
    },
  });
  fs.writeFileSync(path.join(opt.work, 'openclaw.json.example'), fs.readFileSync(path.join(home, '.openclaw', 'openclaw.json')));

  const guide = 'Agree on the shape of the public API. Planner writes the summary and calls discuss-callback.';
  await setRules([
    { name: 'create', model: 'planner-model', lastUserIncludes: 'OPEN-DISCUSSION', reply: { toolCalls: [{ name: 'discord_channel_create',
      arguments: { name: 'api-shape', participants: ['reviewer'], callbackChannelId: WORK_CHANNEL, discussGuide: guide } }] } },
    { name: 'created', model: 'planner-model', afterTool: 'discord_channel_create', reply: { text: 'Discussion opened.' } },
    { name: 'write', model: 'planner-model', lastUserIncludes: 'WRAP-UP', reply: { toolCalls: [{ name: 'write',
      arguments: { path: SUMMARY, content: '# API shape\n\nDecision: one entry point, versioned structs.\n' } }] } },
    { name: 'callback', model: 'planner-model', afterTool: 'write', reply: { toolCalls: [{ name: 'discuss-callback', arguments: { summaryPath: SUMMARY } }] } },
    { name: 'closed', model: 'planner-model', afterTool: 'discuss-callback', reply: { text: 'Summary handed back.' } },
    { name: 'review-1', model: 'reviewer-model', lastUserIncludes: 'REVIEW-1', reply: { text: 'Versioned structs behind one entry point.' } },
    { name: 'reviewer-real', model: 'reviewer-model', anyTurn: true, reply: { text: 'REVIEWER SPOKE THROUGH THE REAL MODEL' } },
  ]);

  // 1. planner opens the discussion from the work channel.
  let mark = (await modelRequests()).length;
  const t1 = await turn(home, 'planner', `agent:planner:discord:channel:${WORK_CHANNEL}`, 'OPEN-DISCUSSION with reviewer about the API shape');
  let reqs = (await modelRequests()).slice(mark);
  const lf = loadFailure(t1);
  check('1: dirigent.so loads through the bridge', !lf, lf || '');
  check('1: planner turn ends', t1.code === 0, `exit ${t1.code}; stderr tail: ${t1.stderr.slice(-1500)}`);
  check('1: the model was offered discord_channel_create and discuss-callback',
    reqs[0] && reqs[0].tools.includes('discord_channel_create') && reqs[0].tools.includes('discuss-callback'),
    `tools: ${reqs[0] ? reqs[0].tools.join(',') : 'no request'}`);
  const createdReq = reqs.find((r) => r.afterTool === 'discord_channel_create');
  check('1: discord_channel_create returned to the model without an error',
    createdReq && !/OC_ERR|error/i.test(createdReq.lastToolResult || ''), createdReq ? createdReq.lastToolResult : 'tool never answered');
  const created = (await fakeRequests()).filter((r) => r.route === 'POST /guilds/{id}/channels');
  const disc = (await fakeChannels()).find((c) => c.name === 'api-shape');
  check('1: fake Discord got the private channel', created.length === 1 && created[0].status >= 200 && created[0].status < 300 && disc,
    JSON.stringify(created.map((r) => ({ status: r.status, body: r.body }))));
  const D = disc && disc.id;
  if (D) {
    const everyone = (disc.permission_overwrites || []).find((o) => o.id === GUILD);
    const members = (disc.permission_overwrites || []).filter((o) => o.type === 1 || o.type === '1').map((o) => o.id).sort();
    check('1: channel is private to planner, reviewer and the moderator',
      everyone && (BigInt(everyone.deny) & 1024n) === 1024n &&
      JSON.stringify(members) === JSON.stringify([USERS.planner.id, USERS.reviewer.id, USERS.moderator.id].sort()),
      JSON.stringify(disc.permission_overwrites));
    const kickoff = await waitFor(async () => (await fakeMessages(D)).find((m) => m.author && m.author.id === USERS.moderator.id), 15_000);
    check('1: kickoff posted by the moderator, mentioning the reviewer',
      kickoff && kickoff.content.includes(`<@${USERS.reviewer.id}>`), kickoff ? kickoff.content : 'no moderator message in the discussion channel');
  }
  check('1: no-reply provider not used yet', noreplyCalls().length === 0, noreplyCalls().join('\n'));
  if (!D) return note('the discussion channel does not exist: steps 2-4 cannot run');

  // 2a. After the kickoff the first participant holds the turn (the
  // plugin's design: the initiator's guide is the opening word), so the
  // reviewer's first turn runs on the real model and passes the turn on.
  mark = (await modelRequests()).length;
  let nr0 = noreplyCalls().length;
  const t2a = await turn(home, 'reviewer', `agent:reviewer:discord:channel:${D}`, 'REVIEW-1: what do you think of the API shape?');
  reqs = (await modelRequests()).slice(mark);
  check('2a: reviewer, holding the turn after the kickoff, ran on the real model',
    t2a.code === 0 && reqs.some((r) => r.model === 'reviewer-model') && noreplyCalls().length === nr0,
    `exit ${t2a.code}; models: ${reqs.map((r) => r.model).join(',') || 'none'}; no-reply calls: ${noreplyCalls().length - nr0}`);

  // 2b. The turn is the planner's now: the reviewer's next turn goes to the
  // no-reply model.
  mark = (await modelRequests()).length;
  nr0 = noreplyCalls().length;
  const claimedBefore = claimedRuns(D, 'reviewer');
  const t2 = await turn(home, 'reviewer', `agent:reviewer:discord:channel:${D}`, 'REVIEW-2: anything else?');
  reqs = (await modelRequests()).slice(mark);
  // OpenClaw 2026.9 has claim hooks: the plugin claims a non-speaker's run
  // (before_agent_reply), so no model at all is asked, not even the
  // no-reply one; the claim is recorded under the run's id.
  const claimed2 = claimedRuns(D, 'reviewer');
  check('2b: reviewer turn (not its turn) was claimed: no model asked, not even dirigent-noreply',
    noreplyCalls().length === nr0 && claimed2 > claimedBefore,
    `no-reply calls ${noreplyCalls().length - nr0}; claimed runs of reviewer ${claimedBefore} -> ${claimed2}`);
  check('2b: the real model received nothing for the reviewer', reqs.filter((r) => r.model === 'reviewer-model').length === 0,
    reqs.map((r) => r.model).join(','));
  check('2b: silent turn ends as OpenClaw reports a NO_REPLY-only CLI turn',
    t2.code === 0 || /incomplete/.test(t2.stdout), `exit ${t2.code}, stopReason ${stopReason(t2)}`);

  // 3. planner writes the summary and calls back.
  mark = (await modelRequests()).length;
  nr0 = noreplyCalls().length;
  const t3 = await turn(home, 'planner', `agent:planner:discord:channel:${D}`, 'WRAP-UP: write the summary and hand it back');
  reqs = (await modelRequests()).slice(mark);
  check('3: planner (the speaker) ran on the real model', reqs.some((r) => r.model === 'planner-model'),
    `models: ${reqs.map((r) => r.model).join(',') || 'none'}; no-reply calls: ${noreplyCalls().length - nr0}`);
  check('3: summary written into the planner workspace', fs.existsSync(path.join(ws.planner, SUMMARY)), path.join(ws.planner, SUMMARY));
  const cb = reqs.find((r) => r.afterTool === 'discuss-callback');
  check('3: discuss-callback answered "closed"', cb && /closed/.test(cb.lastToolResult || '') && !/OC_ERR/.test(cb.lastToolResult || ''),
    cb ? cb.lastToolResult : `tool never answered (turn exit ${t3.code})`);
  const result = await waitFor(async () => (await fakeMessages(WORK_CHANNEL))
    .find((m) => m.author && m.author.id === USERS.moderator.id && m.content.includes(SUMMARY)), 15_000);
  check('3: the work channel got the result with the summary path, mentioning the planner',
    result && result.content.includes(`<@${USERS.planner.id}>`), result ? result.content : 'no moderator result message in the work channel');

  // 4. a later reviewer turn in the closed channel: still no-reply.
  mark = (await modelRequests()).length;
  nr0 = noreplyCalls().length;
  await turn(home, 'reviewer', `agent:reviewer:discord:channel:${D}`, 'Reviewer, anything to add?');
  reqs = (await modelRequests()).slice(mark);
  check('4: later reviewer turn in the closed channel asked no model (claimed)', noreplyCalls().length === nr0 &&
    claimedRuns(D, 'reviewer') > claimed2, `no-reply calls ${noreplyCalls().length - nr0}`);
  check('4: the real model received nothing for the reviewer', reqs.filter((r) => r.model === 'reviewer-model').length === 0,
    reqs.map((r) => r.model).join(','));
  const sessions = path.join(home, 'state', 'dirigent-openclaw-sessions.jsonl');
  let file = null;
  try {
    file = { sessions: {} };
    for (const line of fs.readFileSync(sessions, 'utf8').split('\n')) if (line) { const r = JSON.parse(line); file.sessions[r.k] = r.s; }
  } catch { file = null; /* checked */ }
  const rv = file && file.sessions[`agent:reviewer:discord:channel:${D}`];
  check('4: the reviewer session carries the persistent no-reply override (session_patch)',
    rv && rv.providerOverride === 'noreply' && rv.modelOverride === 'no-reply', JSON.stringify(file));
}

// Runs of an agent's session in a channel the plugin recorded (a claimed
// run is recorded at the claim; a run that ended at its agent_end).
function claimedRuns(channel, agent) {
  const db = path.join(opt.work, 'home', 'state', 'dirigent.db');
  const c = new DatabaseSync(db, { readOnly: true });
  try {
    return c.prepare('SELECT COUNT(*) AS n FROM turn_runs WHERE session_key = ?')
      .get(`agent:${agent}:discord:channel:${channel}`).n;
  } finally {
    c.close();
  }
}

if (!opt.only || opt.only === 'probe') await probeTurn();
if (!opt.only || opt.only === 'decide') await decideTurn();
if (!opt.only || opt.only === 'story') await story();

const failed = summary();
console.log(`scenario: logs and configs in ${opt.work}`);
cleanup();
process.exit(failed ? 1 : 0);
