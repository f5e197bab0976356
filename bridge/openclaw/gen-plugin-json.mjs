// gen-plugin-json.mjs -- writes OpenClaw's openclaw.plugin.json from the
// repository's manifest.json, so the two can never disagree.
//
//   node bridge/openclaw/gen-plugin-json.mjs [manifest.json] [out.json]
//
// Same id, name, description, version, configSchema and contracts. The
// only addition is the bridge's own config object `bridge` (soPath, ...):
// OpenClaw validates plugins.entries.dirigent.config against this schema,
// and the bridge strips `bridge` before it hands the rest to the native
// init (which refuses keys it does not know).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const src = process.argv[2] || path.join(here, '..', '..', 'manifest.json');
const out = process.argv[3] || path.join(here, 'openclaw.plugin.json');

function fail(msg) {
  process.stderr.write(`gen-plugin-json: ${msg}\n`);
  process.exit(1);
}

let manifest;
try {
  manifest = JSON.parse(fs.readFileSync(src, 'utf8'));
} catch (e) {
  fail(`cannot read ${src}: ${e.message}`);
}
for (const key of ['id', 'configSchema']) {
  if (manifest[key] === undefined) fail(`${src} has no "${key}"; OpenClaw requires it`);
}
const schema = structuredClone(manifest.configSchema);
if (schema.type !== 'object' || typeof schema.properties !== 'object')
  fail(`${src}: configSchema must be an object schema with "properties"`);
if (schema.properties.bridge)
  fail(`${src}: configSchema already has a "bridge" key; the bridge's own options need that name`);

// Mirrors BRIDGE_KEYS in index.mjs.
schema.properties.bridge = {
  type: 'object',
  additionalProperties: false,
  description: 'Options of the OpenClaw bridge itself; never passed to the native plugin',
  properties: {
    soPath: {
      type: 'string', minLength: 1,
      description: 'Path of dirigent.so (default: env DIRIGENT_SO, then next to index.mjs, then ../../build/dirigent.so)',
    },
    janssonPath: {
      type: 'string', minLength: 1,
      description: 'The jansson library dirigent.so links against (default libjansson.so.4)',
    },
    stateFile: {
      type: 'string', minLength: 1,
      description: 'Journal (JSON lines) of sessions seen and their persistent model overrides (default: dirigent-openclaw-sessions.jsonl beside dbPath)',
    },
    settleMs: {
      type: 'integer', minimum: 0, maximum: 30000,
      description: 'One-shot CLI runs (openclaw agent --local): time given to the plugin to deliver owed messages after agent_end before it is shut down (default 1500)',
    },
  },
};

const plugin = {
  id: manifest.id,
  ...(manifest.name !== undefined ? { name: manifest.name } : {}),
  ...(manifest.description !== undefined ? { description: manifest.description } : {}),
  ...(manifest.version !== undefined ? { version: manifest.version } : {}),
  configSchema: schema,
  // OpenClaw reads contracts.tools only; hooks are registered at run time
  // (api.on), so the manifest's contracts.hooks has no meaning there.
  contracts: { tools: structuredClone((manifest.contracts && manifest.contracts.tools) || []) },
  activation: { onStartup: true },
  // The root command the bridge registers with api.registerCli (index.mjs,
  // CLI_COMMAND): listed here so `openclaw --help` and command routing
  // know it before the plugin's code loads.
  cliCommands: [{
    name: 'dirigent',
    description: 'Dirigent: check the config before the first start (doctor), read the running gateway\'s turn store (status, scopes, why, discussions, show, outbox)',
    hasSubcommands: true,
  }],
  // Read by the bridge (index.mjs): hooks it may call on Node's main thread.
  ...(manifest.threading ? { threading: structuredClone(manifest.threading) } : {}),
};

const text = `${JSON.stringify(plugin, null, 2)}\n`;
let old = null;
try { old = fs.readFileSync(out, 'utf8'); } catch { /* first run */ }
if (old !== text) {
  const tmp = `${out}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, out);
}
