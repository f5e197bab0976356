// decisions-plugin -- a test plugin for the real gateway: a decision
// provider (OpenClaw's api.registerDecisionProvider, contract version 1)
// that answers choice questions from a script file, so Dirigent's
// judge.source "host" runs through OpenClaw's api.runtime.decisions.evaluate
// and the bridge's decide without a real classifier.
//
// Config: {script: JSON file, record: JSONL file (optional)}. The script
// is read on every evaluation (a test rewrites it between stories):
//   {rules: [{lastIncludes?, contextIncludes?, labelsInclude?, times?,
//             label, probability?}], default?: "nobody" | "first" | "miss"}
// The first rule whose conditions hold answers: lastIncludes is looked for
// in the evidence's latest message (the last non-empty line of the state),
// contextIncludes anywhere in it, labelsInclude: every one of these is a
// label of the question. A rule's label that is not a label of the
// question is skipped. No rule: "nobody" when it is a label, else the first
// label ("first"), or an unavailable answer ("miss"); the record says which.
// Usage is estimated as a real provider would report it in size:
// characters / 4 of the question (state, instructions, labels) in, of the
// answer out. Each evaluation is appended to the record file.
// scriptedAnswer() is shared with judge.mjs (the OpenAI-compatible judge).
import fs from 'node:fs';

// The answer of script to {labels, context}: {label, probability, rule}
// or {miss: true}.
export function scriptedAnswer(script, { labels, context }, used = new Map()) {
  const lines = String(context ?? '').split('\n').filter((l) => l.trim());
  const last = lines.at(-1) ?? '';
  const rules = Array.isArray(script?.rules) ? script.rules : [];
  for (const [i, r] of rules.entries()) {
    if (r.lastIncludes && !last.includes(r.lastIncludes)) continue;
    if (r.contextIncludes && !String(context).includes(r.contextIncludes)) continue;
    if (r.labelsInclude && !r.labelsInclude.every((l) => labels.includes(l))) continue;
    if (!labels.includes(r.label)) continue;
    if (r.times !== undefined && (used.get(i) ?? 0) >= r.times) continue;
    used.set(i, (used.get(i) ?? 0) + 1);
    return { label: r.label, probability: r.probability ?? 0.9, rule: r.name ?? `rule ${i}` };
  }
  const dflt = script?.default ?? 'nobody';
  if (dflt === 'miss') return { miss: true };
  if (dflt === 'nobody' && labels.includes('nobody')) return { label: 'nobody', probability: 0.9, rule: 'default nobody' };
  return { label: labels[0], probability: 0.6, rule: 'default first' };
}

export const estimateTokens = (text) => Math.ceil(String(text).length / 4);

function readScript(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return { rules: [], default: 'miss' };
  }
}

function register(api) {
  const cfg = api.pluginConfig ?? {};
  const used = new Map();
  api.registerDecisionProvider({
    id: 'scripted-decisions',
    contractVersion: 1,
    isReady: () => true,
    async evaluate(batch, context) {
      const answers = {};
      const usage = { inputTokens: 0, outputTokens: 0 };
      const state = typeof batch.state === 'string' ? batch.state : JSON.stringify(batch.state);
      const script = readScript(cfg.script);
      const seen = [];
      for (const [id, q] of Object.entries(batch.questions)) {
        if (q.type !== 'choice') return { status: 'unavailable', reason: 'unsupported-input' };
        const labels = Object.keys(q.criteria);
        const a = scriptedAnswer(script, { labels, context: state }, used);
        seen.push({ id, labels, ...a });
        if (a.miss) return { status: 'unavailable', reason: 'invalid-response' };
        answers[id] = { type: 'choice', choice: a.label,
          probabilities: Object.fromEntries(labels.map((l) => [l, l === a.label ? a.probability : (1 - a.probability) / (labels.length - 1)])) };
        usage.inputTokens += estimateTokens(`${state}${JSON.stringify(q)}`);
        usage.outputTokens += estimateTokens(JSON.stringify({ label: a.label, probability: a.probability }));
      }
      if (cfg.record)
        fs.appendFileSync(cfg.record, `${JSON.stringify({ at: Date.now(), model: context.model, agentId: context.agentId ?? null,
          answers: seen, usage, state: state.slice(0, 2000), last: state.split('\n').filter((l) => l.trim()).at(-1)?.slice(0, 200) })}\n`);
      return { status: 'ok', result: { model: context.model, answers, usage } };
    },
  });
}

export default {
  id: 'scripted-decisions',
  name: 'Scripted decisions (test)',
  description: 'Answers decision questions from a script file (Dirigent tests)',
  register,
};
