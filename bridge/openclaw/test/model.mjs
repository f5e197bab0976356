// model.mjs -- a scripted OpenAI-compatible "real model" for the OpenClaw test.
//
//   node model.mjs [--port 0] [--record FILE] [--usage estimate]
//                                               prints http://127.0.0.1:PORT/v1 on stdout;
//                                               every request is also appended to FILE (JSONL)
//   --usage estimate  reports usage as a real provider would, in size: prompt
//                     tokens = characters of the request's messages and tools / 4,
//                     completion tokens = characters of the answer / 4 (rounded up);
//                     without it every answer reports 100 in, 10 out.
//
// POST /v1/chat/completions (plain or stream:true SSE): every request is
// recorded; the answer comes from the first script rule that matches:
//   {model?, lastUserIncludes?, afterTool?, systemIncludes?, times?,
//    reply: {text?, toolCalls?: [{name, arguments}]}}
//   model            the request's model id equals this
//   lastUserIncludes the user text since the last assistant message contains this
//   afterTool        the last message is the result of this tool
//   systemIncludes   the system prompt contains this
//   times            the rule is used at most this many times
//   anyTurn          also match when the last message is a tool result
//   unlessSaid       skip the rule when an assistant message of the request
//                    already holds its reply text (a model does not repeat an
//                    answer it sees in its own history; OpenClaw's context block
//                    of recent channel messages repeats the question)
//   name             label recorded with each request it answered
// Without a match it answers a plain text that says so (the test then
// fails on the content it did not expect, never silently).
// Control (loopback only): POST /_script {rules:[...]} replaces the rules,
// GET /_requests returns the records (?since=N: those after seq N), GET /_health answers 200.
// Binds 127.0.0.1 only: the test never sends traffic anywhere else.
import fs from 'node:fs';
import http from 'node:http';

const args = process.argv.slice(2);
const portArg = args.indexOf('--port');
const port = portArg >= 0 ? Number(args[portArg + 1]) : 0;
const recordArg = args.indexOf('--record');
const recordFile = recordArg >= 0 ? args[recordArg + 1] : null;
const usageArg = args.indexOf('--usage');
const estimateUsage = usageArg >= 0 && args[usageArg + 1] === 'estimate';

let rules = [];
const records = [];
let seq = 0;

function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => (p && typeof p.text === 'string' ? p.text : '')).join('');
  return '';
}

// Summary of one request for assertions: which model, the last user text,
// the tool whose result came last, the tools offered.
function summarize(body) {
  const msgs = Array.isArray(body.messages) ? body.messages : [];
  const callNames = new Map();
  for (const m of msgs)
    for (const tc of (m && m.tool_calls) || [])
      if (tc && tc.id && tc.function) callNames.set(tc.id, tc.function.name);
  // The turn's input: every user message after the last assistant message
  // (OpenClaw sends the prompt and an internal-context message separately).
  let lastUser = '';
  for (const m of msgs) {
    if (m && m.role === 'assistant') lastUser = '';
    else if (m && m.role === 'user') lastUser += `${lastUser ? '\n' : ''}${textOf(m.content)}`;
  }
  // The tool whose result came last since the last assistant message
  // (OpenClaw may append an internal-context user message after it).
  let afterTool = null;
  let lastTool = null;
  for (const m of msgs) {
    if (m && m.role === 'assistant') {
      afterTool = null;
      lastTool = null;
    } else if (m && m.role === 'tool') {
      afterTool = callNames.get(m.tool_call_id) || m.name || '?';
      lastTool = m;
    }
  }
  const system = msgs.filter((m) => m && (m.role === 'system' || m.role === 'developer'))
    .map((m) => textOf(m.content)).join('\n');
  return {
    model: body.model,
    stream: body.stream === true,
    lastUser,
    afterTool,
    lastToolResult: lastTool ? textOf(lastTool.content) : null,
    system,
    tools: Array.isArray(body.tools) ? body.tools.map((t) => t && t.function && t.function.name) : [],
    messageCount: msgs.length,
    said: msgs.filter((m) => m && m.role === 'assistant').map((m) => textOf(m.content)),
  };
}

function pick(s) {
  for (const r of rules) {
    if (r.times !== undefined && (r.used || 0) >= r.times) continue;
    if (r.model !== undefined && r.model !== s.model) continue;
    if (r.lastUserIncludes !== undefined && !s.lastUser.includes(r.lastUserIncludes)) continue;
    if (r.afterTool !== undefined && r.afterTool !== s.afterTool) continue;
    if (r.afterTool === undefined && s.afterTool && r.anyTurn !== true) continue;
    if (r.systemIncludes !== undefined && !s.system.includes(r.systemIncludes)) continue;
    if (r.unlessSaid && r.reply && r.reply.text && s.said.some((t) => t.includes(r.reply.text))) continue;
    r.used = (r.used || 0) + 1;
    return r;
  }
  return null;
}

function send(res, status, obj, headers = {}) {
  const text = JSON.stringify(obj);
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(text);
}

function completion(req, res, body) {
  const s = summarize(body);
  const rule = pick(s);
  const reply = rule ? rule.reply : { text: `SCRIPT-MISS: no rule for model=${s.model} lastUser=${JSON.stringify(s.lastUser.slice(0, 80))} afterTool=${s.afterTool}` };
  seq += 1;
  const id = `chatcmpl-script-${seq}`;
  const rec = { seq, at: Date.now(), ...s, rule: rule ? rule.name ?? `#${rules.indexOf(rule)}` : null, reply, raw: body };
  records.push(rec);
  const created = Math.floor(Date.now() / 1000);
  const toolCalls = (reply.toolCalls || []).map((tc, i) => ({
    index: i, id: `call_${seq}_${i}`, type: 'function',
    function: { name: tc.name, arguments: JSON.stringify(tc.arguments || {}) },
  }));
  const finish = toolCalls.length ? 'tool_calls' : 'stop';
  // Estimated from sizes (4 characters a token, the usual rule of thumb), so
  // a longer history or a bigger tool list costs more, as it would at a provider.
  const tokens = (v) => Math.ceil(JSON.stringify(v ?? '').length / 4);
  const usage = estimateUsage
    ? { prompt_tokens: tokens(body.messages) + tokens(body.tools),
      completion_tokens: reply.text ? tokens(reply.text) : 0 }
    : { prompt_tokens: 100, completion_tokens: 10 };
  if (estimateUsage) usage.completion_tokens += toolCalls.length ? tokens(toolCalls) : 0;
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  rec.usage = usage;
  if (recordFile) fs.appendFileSync(recordFile, `${JSON.stringify(rec)}\n`);
  if (!s.stream) {
    const message = { role: 'assistant', content: reply.text || (toolCalls.length ? null : '') };
    if (toolCalls.length) message.tool_calls = toolCalls.map(({ index, ...rest }) => rest);
    return send(res, 200, { id, object: 'chat.completion', created, model: body.model,
      choices: [{ index: 0, message, finish_reason: finish }], usage });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (delta, fin, extra = {}) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created,
    model: body.model, choices: [{ index: 0, delta, finish_reason: fin }], ...extra })}\n\n`;
  let out = chunk({ role: 'assistant', content: '' }, null);
  if (reply.text) out += chunk({ content: reply.text }, null);
  if (toolCalls.length) out += chunk({ tool_calls: toolCalls }, null);
  out += chunk({}, finish, { usage });
  out += 'data: [DONE]\n\n';
  res.end(out);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > 64 * 1024 * 1024) req.destroy();
    else chunks.push(c);
  });
  req.on('end', () => {
    const url = (req.url || '').replace(/^\/v1\//, '/');
    let body = {};
    if (chunks.length) {
      try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')); }
      catch (e) { return send(res, 400, { error: { message: `bad JSON: ${e.message}` } }); }
    }
    if (req.method === 'POST' && url === '/chat/completions') return completion(req, res, body);
    if (req.method === 'GET' && url === '/models')
      return send(res, 200, { object: 'list', data: [{ id: 'scripted', object: 'model', owned_by: 'test' }] });
    if (req.method === 'POST' && url === '/_script') {
      rules = Array.isArray(body.rules) ? body.rules : [];
      return send(res, 200, { ok: true, rules: rules.length });
    }
    if (req.method === 'GET' && url === '/_requests') return send(res, 200, records);
    // Only the records after seq N: a poller need not fetch every prompt again.
    const since = /^\/_requests\?since=(\d+)$/.exec(url);
    if (req.method === 'GET' && since) return send(res, 200, records.filter((r) => r.seq > Number(since[1])));
    if (req.method === 'GET' && url === '/_health') return send(res, 200, { ok: true });
    send(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
  });
});

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${server.address().port}/v1\n`);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => server.close(() => process.exit(0)));
