// judge.mjs -- a scripted OpenAI-compatible judge for Dirigent's
// judge.source "openai" (the plugin's own libcurl client): answers
// POST /v1/chat/completions with {"label", "probability"} as the message's
// content, chosen by the same script as the test decision provider
// (decisions-plugin/index.mjs, scriptedAnswer): the labels from the user
// message's "Labels: [...]" line, the evidence after the first blank line.
// Usage: prompt tokens = characters of the messages / 4, completion tokens
// = characters of the answer / 4.
//
//   node judge.mjs [--port 0] [--script FILE] [--record FILE]
//                  prints http://127.0.0.1:PORT/v1 on stdout
// Control (loopback only): POST /_script {rules, default} replaces the
// script; GET /_requests the records; GET /_health 200.
import fs from 'node:fs';
import http from 'node:http';
import { scriptedAnswer, estimateTokens } from './decisions-plugin/index.mjs';

const args = process.argv.slice(2);
const arg = (name) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : null);
const recordFile = arg('--record');
let script = arg('--script') ? JSON.parse(fs.readFileSync(arg('--script'), 'utf8')) : { rules: [] };
let used = new Map();
const records = [];

function reply(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

// The question's labels and evidence from the chat request.
function questionOf(body) {
  const user = (body.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content ?? '')).join('\n');
  const m = /^Labels: (\[.*\])$/m.exec(user);
  let labels = [];
  try { labels = m ? JSON.parse(m[1]) : []; } catch { labels = []; }
  const cut = user.indexOf('\n\n');
  return { labels, context: cut >= 0 ? user.slice(cut + 2) : '' };
}

const server = http.createServer((req, res) => {
  let data = '';
  req.on('data', (c) => { data += c; });
  req.on('end', () => {
    if (req.method === 'GET' && req.url === '/_health') return reply(res, 200, { ok: true });
    if (req.method === 'GET' && req.url === '/_requests') return reply(res, 200, records);
    if (req.method === 'POST' && req.url === '/_script') {
      script = JSON.parse(data);
      used = new Map();
      return reply(res, 200, { ok: true });
    }
    if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) return reply(res, 404, { error: 'not found' });
    let body;
    try { body = JSON.parse(data); } catch { return reply(res, 400, { error: { message: 'body is not JSON' } }); }
    const q = questionOf(body);
    const a = q.labels.length >= 2 ? scriptedAnswer(script, q, used) : { miss: true };
    const content = a.miss ? 'SCRIPT-MISS: no rule for this question' : JSON.stringify({ label: a.label, probability: a.probability });
    const usage = { prompt_tokens: estimateTokens(JSON.stringify(body.messages ?? [])), completion_tokens: estimateTokens(content) };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const rec = { at: Date.now(), model: body.model, labels: q.labels, ...a, usage,
      last: q.context.split('\n').filter((l) => l.trim()).at(-1)?.slice(0, 200) };
    records.push(rec);
    if (recordFile) fs.appendFileSync(recordFile, `${JSON.stringify(rec)}\n`);
    return reply(res, 200, { id: `judge-${records.length}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000),
      model: body.model ?? 'scripted-judge', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }], usage });
  });
});
server.listen(Number(arg('--port') ?? 0), '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}/v1`);
});
