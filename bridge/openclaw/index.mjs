// index.mjs -- OpenClaw plugin that runs the native Dirigent plugin.
//
// OpenClaw plugins are JS modules; Dirigent is a C shared object speaking
// the native plugin ABI v1 (include/openclaw/plugin.h). This file loads
// dirigent.so and libjansson with koffi and translates, never
// reinterprets: oc_host_api is implemented here (register_tool ->
// api.registerTool, on -> api.on with the priority, log -> api.logger,
// session_patch/sessions_list over a persistent session table), JSON
// crosses through json_dumps/json_loads, and OpenClaw's contexts are renamed
// to the ABI's. Where OpenClaw behaves differently from the ABI contract the
// difference is handled here and listed in README.md.
//
// Threads. JS runs on the main thread only. koffi relays a registered
// callback that a foreign thread calls (the plugin's outbox thread logging,
// say) to the main thread and blocks that thread until the callback has run
// there. So the main thread must never wait for the plugin while the plugin
// might wait for it: every call into the plugin except init, and the hooks
// the plugin's manifest declares synchronous (threading.synchronousHooks:
// they never wait for a thread that calls the host), runs with koffi's
// .async on a worker thread while the main thread keeps its event loop
// free. init runs synchronously (OpenClaw's register() is synchronous
// and tools and hooks must be registered inside it); the ABI forbids the
// plugin's own threads to call the host before init returns, so that is
// safe. shutdown is always .async and only starts once no call is in
// flight, which gives the plugin the ABI's promise that init and shutdown
// never overlap any other call.
import koffi from 'koffi';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker } from 'node:worker_threads';

const ABI_MAJOR = 1;
// 1.1: the optional session_reset and run_abort, offered when OpenClaw's
// plugin SDK has what they need (see openclawSdk below).
// 1.2: the optional decide, offered when OpenClaw has decision models
// (api.runtime.decisions; see "ABI 1.2" below).
const ABI_MINOR = 2;
const OC = {
  OK: 0, INVALID: -1, NOT_FOUND: -2, DENIED: -3, CONFLICT: -4,
  IO: -5, NOMEM: -6, UNSUPPORTED: -7, INTERNAL: -8,
};
const STATUS_NAMES = new Map([
  [0, 'OC_OK'], [-1, 'OC_ERR_INVALID'], [-2, 'OC_ERR_NOT_FOUND'], [-3, 'OC_ERR_DENIED'],
  [-4, 'OC_ERR_CONFLICT'], [-5, 'OC_ERR_IO'], [-6, 'OC_ERR_NOMEM'],
  [-7, 'OC_ERR_UNSUPPORTED'], [-8, 'OC_ERR_INTERNAL'],
]);
const statusName = (s) => STATUS_NAMES.get(s) ?? 'OC_UNKNOWN';

// Hooks of ABI v1. "Modify" hooks are registered with OpenClaw one per
// native registration, at the plugin's priority, so they interleave with
// other plugins exactly as the plugin asked. OpenClaw runs observe hooks
// concurrently; the bridge runs the plugin's handlers of one observe hook
// itself, in priority order, and adds its own lifecycle work after them.
// Claim hooks (before_agent_reply, reply_payload_sending) are dispatched
// like modify hooks: one OpenClaw registration per native registration.
const MODIFY_HOOKS = new Set(['before_model_resolve', 'before_prompt_build', 'message_sending',
  'before_agent_reply', 'reply_payload_sending']);
const OBSERVE_HOOKS = ['message_received', 'agent_end', 'gateway_start', 'gateway_stop',
  'model_call_ended', 'llm_output'];
const KNOWN_HOOKS = new Set([...MODIFY_HOOKS, ...OBSERVE_HOOKS]);

// The bridge's own before_model_resolve runs before everything else: a
// persistent override (session_patch) wins, like a session-store override.
const BRIDGE_PRIORITY = 1_000_000;
const JSON_DECODE_ANY = 0x4;
const JSON_COMPACT = 0x20;
const JSON_ENCODE_ANY = 0x200;
const ERR_LEN = 1024;
const DEFAULT_SETTLE_MS = 1500;
const ENDED_RUNS_KEPT = 512;

// Plugin id and manifest: the generated openclaw.plugin.json beside us.
let PLUGIN_ID = 'dirigent';
// Hooks the plugin declares safe to call synchronously (manifest
// "threading.synchronousHooks"): they never wait for a lock held by a
// thread that calls the host. Every other call goes through .async.
let SYNC_HOOKS = new Set();
try {
  const m = JSON.parse(fs.readFileSync(new URL('./openclaw.plugin.json', import.meta.url), 'utf8'));
  PLUGIN_ID = m.id || PLUGIN_ID;
  const declared = m.threading && m.threading.synchronousHooks;
  if (Array.isArray(declared)) SYNC_HOOKS = new Set(declared.filter((h) => h === 'before_model_resolve'));
} catch { /* the loader itself reports a missing manifest */ }

// ---- process-wide state ------------------------------------------------------
// OpenClaw evaluates this module once per registry (it copies plugin sources
// into capture folders), so module scope is not process scope. One native
// instance per process lives on globalThis instead.
const G_KEY = Symbol.for(`dirigent.openclaw-bridge.v1:${PLUGIN_ID}`);
const g = (globalThis[G_KEY] ??= {
  native: null,        // koffi bindings of the first full registration
  instances: new Map(),// host id -> live instance (callbacks route by it)
  nextHostId: 0,
  instance: null,      // the instance new calls go to
  nativeConfig: null,  // config handed to init (bridge keys removed)
  configKey: null,
  bridgeOpts: {},
  surface: null,       // {tools: Map name->{description, parameters}, hooks: [{hook, priority}]}
  transition: null,    // promise of a shutdown or swap in progress
  stopped: false,      // gateway_stop happened: no lazy re-init
  gatewayStarted: false,
  oneShotSeen: false,
  endedRuns: new Set(),
  sessions: null,
  logger: null,
  sdk: null,           // OpenClaw SDK modules of the 1.1 host calls, loaded on first use
  decisions: null,     // api.runtime.decisions of the latest live registration that has it
  decider: null,       // the decide worker: {worker, port, flag, cb} or {failed: reason}
});

function log(level, message) {
  const l = g.logger;
  const text = `[${PLUGIN_ID}] ${message}`;
  if (!l) {
    process.stderr.write(`${text}\n`);
    return;
  }
  const fn = [l.debug, l.info, l.warn, l.error][level] ?? l.info;
  try {
    (fn ?? l.info).call(l, text);
  } catch {
    process.stderr.write(`${text}\n`);
  }
}

const isNull = (p) => p === null || p === undefined || p === 0n || p === 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- native bindings -----------------------------------------------------------

function resolveHome(p) {
  return p.startsWith('~/') ? path.join(os.homedir(), p.slice(2)) : p;
}

function findSo(opts, rootDir) {
  const tried = [];
  const candidates = [];
  if (opts.soPath) candidates.push(path.resolve(rootDir ?? process.cwd(), resolveHome(opts.soPath)));
  else {
    if (process.env.DIRIGENT_SO) candidates.push(path.resolve(resolveHome(process.env.DIRIGENT_SO)));
    if (rootDir) {
      candidates.push(path.join(rootDir, 'dirigent.so'));
      candidates.push(path.join(rootDir, '..', '..', 'build', 'dirigent.so'));
    }
  }
  for (const c of candidates) {
    tried.push(c);
    if (fs.existsSync(c)) return c;
  }
  throw new Error(`cannot find dirigent.so (tried: ${tried.join(', ') || 'nothing'}); set ` +
    `plugins.entries.${PLUGIN_ID}.config.bridge.soPath or env DIRIGENT_SO to the built library`);
}

// The Debian/Ubuntu package of each library dirigent.so (or the bridge)
// loads, for the error a user sees when one is missing.
const RUNTIME_PACKAGES = {
  'libjansson.so.4': 'libjansson4',
  'libsqlite3.so.0': 'libsqlite3-0',
  'libpq.so.5': 'libpq5',
  'libcurl.so.4': 'libcurl4 (libcurl4t64 on Debian 13 / Ubuntu 24.04 and later)',
  'libmicrohttpd.so.12': 'libmicrohttpd12 (libmicrohttpd12t64 on Debian 13 / Ubuntu 24.04 and later)',
  'libc.so.6': 'libc6',
};
const ELF_MACHINES = { 3: 'ia32', 40: 'arm', 62: 'x64', 183: 'arm64', 243: 'riscv64', 258: 'loong64', 21: 'ppc64' };

// koffi's raw dlopen error turned into what to do about it: which library
// is missing and the package that provides it, or that the file was built
// for another architecture. `file` is what was being loaded.
function explainLoadError(file, e) {
  const raw = String(e && e.message ? e.message : e);
  let head = null;
  try {
    const fd = fs.openSync(file, 'r');
    try {
      head = Buffer.alloc(20);
      if (fs.readSync(fd, head, 0, 20, 0) < 20) head = null;
    } finally {
      fs.closeSync(fd);
    }
  } catch { /* a bare soname such as libjansson.so.4: no file to read */ }
  if (head) {
    if (head.readUInt32BE(0) !== 0x7f454c46)
      return new Error(`${file} is not an ELF shared library (${raw}); rebuild it with make`);
    const bits = head[4] === 2 ? 64 : 32;
    const machine = head[5] === 2 ? head.readUInt16BE(18) : head.readUInt16LE(18);
    const arch = ELF_MACHINES[machine] ?? `ELF machine ${machine}`;
    const want = process.arch;
    const wantBits = ['x64', 'arm64', 'riscv64', 'loong64', 'ppc64', 's390x'].includes(want) ? 64 : 32;
    if (arch !== want || bits !== wantBits)
      return new Error(`${file} is built for ${arch} (${bits}-bit) but this Node runs on ${want}: ` +
        `build dirigent.so on this machine (make) or install the package built for ${want} (${raw})`);
  }
  const m = /([\w.+-]+\.so(?:\.\d+)*): cannot open shared object file/.exec(raw);
  if (m) {
    const lib = m[1];
    const pkg = RUNTIME_PACKAGES[lib];
    const needer = path.basename(file) === lib ? 'the bridge' : file;
    return new Error(`${needer} needs ${lib}, which is not installed` +
      (pkg ? `: install the package ${pkg} (apt-get install ${pkg.split(' ')[0]})` : ' (install the package that provides it)') +
      `; runtime packages: libjansson4 libsqlite3-0 libpq5 libcurl4 (${raw})`);
  }
  return new Error(`cannot load ${file}: ${raw}`);
}

function loadLibrary(k, file) {
  try {
    return k.load(file);
  } catch (e) {
    throw explainLoadError(file, e);
  }
}

function loadNative(opts, rootDir) {
  const k = koffi;
  try {
    // Plugin code runs on koffi's stack during .async calls; its 128 KiB
    // default is too small for SQLite + libcurl + path buffers.
    k.config({ ...k.config(), async_stack_size: 4 * 1024 * 1024 });
  } catch (e) {
    log(2, `koffi.config refused a larger async stack (${e.message}); continuing with its default`);
  }
  const soPath = findSo(opts, rootDir);
  // A release package carries its libjansson.so.4 beside dirigent.so (which
  // finds it by RUNPATH $ORIGIN): the bridge loads that same file first, so
  // both sides of the ABI share one jansson (json_t crosses it), and the
  // system's libjansson4 is not needed.
  const bundled = path.join(path.dirname(soPath), 'libjansson.so.4');
  const janssonPath = opts.janssonPath || (fs.existsSync(bundled) ? bundled : 'libjansson.so.4');
  const jl = loadLibrary(k, janssonPath);
  const libc = loadLibrary(k, 'libc.so.6');
  const lib = loadLibrary(k, soPath);
  const n = {
    k, soPath, lib, janssonPath,
    json_loads: jl.func('void *json_loads(const char *input, size_t flags, void *error)'),
    json_dumps: jl.func('void *json_dumps(void *json, size_t flags)'),
    // The buffer as a plain pointer: jansson writes into the Buffer's memory.
    json_dumpb: jl.func('size_t json_dumpb(void *json, void *buffer, size_t size, size_t flags)'),
    json_array: jl.func('void *json_array(void)'),
    json_array_append_new: jl.func('int json_array_append_new(void *array, void *value)'),
    json_delete: jl.func('void json_delete(void *json)'),
    json_deep_copy: jl.func('void *json_deep_copy(void *json)'),
    json_string: jl.func('void *json_string(const char *value)'),
    json_object_set_new: jl.func('int json_object_set_new(void *object, const char *key, void *value)'),
    free: libc.func('void free(void *ptr)'),
    OcTool: k.struct('dg_bridge_oc_tool', {
      struct_size: 'uint32_t', name: 'const char *', description: 'const char *',
      parameters: 'const char *', execute: 'void *',
    }),
    OcPlugin: k.struct('dg_bridge_oc_plugin', {
      abi_major: 'uint32_t', abi_minor: 'uint32_t', struct_size: 'uint32_t',
      id: 'const char *', version: 'const char *', init: 'void *', shutdown: 'void *',
    }),
    OcHostApi: k.struct('dg_bridge_oc_host_api', {
      abi_major: 'uint32_t', abi_minor: 'uint32_t', struct_size: 'uint32_t', host: 'void *',
      register_tool: 'void *', on: 'void *', session_patch: 'void *',
      sessions_list: 'void *', log: 'void *',
      // ABI 1.1 (optional: NULL when OpenClaw does not offer them).
      session_reset: 'void *', run_abort: 'void *',
      // ABI 1.2 (optional: NULL without OpenClaw's decision models).
      decide: 'void *',
    }),
    HandlerFn: k.proto('int dg_bridge_handler_fn(void *state, void *a, void *b, _Out_ void **result)'),
    // The synchronous path passes one preallocated result slot instead of
    // koffi's output marshalling.
    HandlerSlotFn: k.proto('int dg_bridge_handler_slot_fn(void *state, void *a, void *b, void *result)'),
    InitFn: k.proto('int dg_bridge_init_fn(void *api, void *config, _Out_ void **state, void *err, size_t err_len)'),
    ShutdownFn: k.proto('void dg_bridge_shutdown_fn(void *state)'),
    fnCache: new Map(),
  };
  const entry = lib.func('void *oc_plugin_entry(void)');
  const tablePtr = entry();
  if (isNull(tablePtr)) throw new Error(`${soPath}: oc_plugin_entry returned NULL`);
  const sizeOk = k.decode(tablePtr, 'uint32_t', 3)[2];
  if (sizeOk < k.sizeof(n.OcPlugin))
    throw new Error(`${soPath}: oc_plugin is ${sizeOk} bytes, ABI v1 needs ${k.sizeof(n.OcPlugin)}`);
  const table = k.decode(tablePtr, n.OcPlugin);
  if (table.abi_major !== ABI_MAJOR)
    throw new Error(`${soPath} speaks plugin ABI ${table.abi_major}.${table.abi_minor}; this bridge hosts ABI ${ABI_MAJOR}.x only`);
  if (table.abi_minor > ABI_MINOR)
    throw new Error(`${soPath} needs ABI minor ${table.abi_minor}; this bridge offers ${ABI_MAJOR}.${ABI_MINOR} (update the bridge)`);
  if (isNull(table.init) || isNull(table.shutdown))
    throw new Error(`${soPath}: oc_plugin has a NULL init or shutdown`);
  n.table = table;
  n.init = k.decode(table.init, n.InitFn);
  n.shutdown = k.decode(table.shutdown, n.ShutdownFn);
  if (table.id !== PLUGIN_ID)
    log(2, `${soPath} calls itself "${table.id}" but the OpenClaw manifest says "${PLUGIN_ID}"`);

  // Host callbacks, registered once for the process (koffi has a bounded
  // number of slots). They run on the main thread whatever thread calls
  // them, and must never throw: an exception would reach C as 0 (= OC_OK).
  n.cb = {
    register_tool: k.register(cbRegisterTool, k.pointer(k.proto('int dg_bridge_register_tool(void *host, void *tool)'))),
    on: k.register(cbOn, k.pointer(k.proto('int dg_bridge_on(void *host, const char *hook, void *fn, int priority)'))),
    session_patch: k.register(cbSessionPatch, k.pointer(k.proto(
      'int dg_bridge_session_patch(void *host, const char *key, const char *provider, const char *model)'))),
    sessions_list: k.register(cbSessionsList, k.pointer(k.proto('void *dg_bridge_sessions_list(void *host, const char *channel)'))),
    log: k.register(cbLog, k.pointer(k.proto('void dg_bridge_log(void *host, int level, const char *message)'))),
    session_reset: k.register(cbSessionReset, k.pointer(k.proto('int dg_bridge_session_reset(void *host, const char *key)'))),
    run_abort: k.register(cbRunAbort, k.pointer(k.proto('int dg_bridge_run_abort(void *host, const char *key)'))),
  };
  return n;
}

// JSON both ways. toJson returns a new jansson reference (decref it);
// fromJson copies a jansson value into JS and leaves the reference alone.
function toJson(value) {
  const n = g.native;
  const p = n.json_loads(JSON.stringify(value ?? null), JSON_DECODE_ANY, null);
  if (isNull(p)) throw new Error('json_loads refused a value the bridge encoded (out of memory?)');
  return p;
}

function fromJson(p) {
  if (isNull(p)) return undefined;
  const n = g.native;
  const s = n.json_dumps(p, JSON_COMPACT | JSON_ENCODE_ANY);
  if (isNull(s)) throw new Error('json_dumps failed on a value from the plugin');
  try {
    return JSON.parse(n.k.decode(s, 'char', -1));
  } finally {
    n.free(s);
  }
}

// json_decref is an inline function in jansson.h; the library's own
// (atomic) decref runs when a temporary array that holds the value dies.
function decref(p) {
  if (isNull(p)) return;
  const n = g.native;
  const arr = n.json_array();
  if (isNull(arr)) {
    log(3, 'out of memory releasing a JSON value; it leaks');
    return;
  }
  n.json_array_append_new(arr, p); // steals p (decrefs it on failure)
  n.json_delete(arr);
}

function handlerFn(ptr) {
  const n = g.native;
  const key = String(ptr);
  let f = n.fnCache.get(key);
  if (!f) {
    f = n.k.decode(ptr, n.HandlerFn);
    n.fnCache.set(key, f);
  }
  return f;
}

function callAsync(f, ...args) {
  return new Promise((resolve, reject) => {
    f.async(...args, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

// One call of a tool or hook handler on a koffi worker thread.
// Returns {status, result} with result copied into JS (or undefined).
async function callHandler(inst, fnPtr, a, b) {
  const pa = toJson(a);
  let pb;
  try {
    pb = toJson(b);
    const out = [null];
    const status = await callAsync(handlerFn(fnPtr), inst.state, pa, pb, out);
    let result;
    if (!isNull(out[0])) {
      try {
        result = fromJson(out[0]);
      } finally {
        decref(out[0]);
      }
    }
    return { status, result };
  } finally {
    decref(pa);
    decref(pb);
  }
}

// Inputs of the synchronous path by their JSON text: a run asks
// before_model_resolve with the same event and context several times, and
// a session's context repeats across runs, so most calls skip json_loads
// and the release. The plugin only borrows its inputs (plugin.h), so a
// cached value is never changed or kept by it. Bounded; oldest out first.
const INPUT_CACHE_MAX = 256;
const inputCache = new Map(); // JSON text -> jansson pointer (one reference, ours)

function cachedJson(value) {
  const text = JSON.stringify(value ?? null);
  return cachedJsonText(text);
}

function cachedJsonText(text) {
  let p = inputCache.get(text);
  if (p !== undefined) return p;
  const n = g.native;
  p = n.json_loads(text, JSON_DECODE_ANY, null);
  if (isNull(p)) throw new Error('json_loads refused a value the bridge encoded (out of memory?)');
  inputCache.set(text, p);
  if (inputCache.size > INPUT_CACHE_MAX) {
    const [oldest, op] = inputCache.entries().next().value;
    inputCache.delete(oldest);
    decref(op);
  }
  return p;
}

const promptCache = new Map(); // prompt -> jansson {prompt} (ours)
const NO_PROMPT = Symbol('no prompt');
function promptEvent(prompt) {
  const key = prompt === undefined ? NO_PROMPT : prompt;
  let p = promptCache.get(key);
  if (p !== undefined) return p;
  p = toJson(prompt === undefined ? {} : { prompt });
  promptCache.set(key, p);
  if (promptCache.size > INPUT_CACHE_MAX) {
    const [oldest, op] = promptCache.entries().next().value;
    promptCache.delete(oldest);
    decref(op);
  }
  return p;
}

// A result into JS through one reusable buffer (json_dumpb: no allocation
// on either side); a result too large for it goes the general way.
const RESULT_BUF = Buffer.alloc(4096);

// Results by their text: a plugin gives the same few answers again and
// again (an override, a cancel), so the parsed value is kept. Callers must
// not change what they get (hookResult copies fields into a new object).
const resultCache = new Map();
function takeResult(p) {
  const n = g.native;
  try {
    const len = Number(n.json_dumpb(p, RESULT_BUF, RESULT_BUF.length, JSON_COMPACT | JSON_ENCODE_ANY));
    if (len > 0 && len <= RESULT_BUF.length) {
      const text = RESULT_BUF.latin1Slice(0, len);
      let v = resultCache.get(text);
      if (v === undefined) {
        v = JSON.parse(RESULT_BUF.toString('utf8', 0, len));
        if (resultCache.size < INPUT_CACHE_MAX) resultCache.set(text, v);
      }
      return v;
    }
    return fromJson(p);
  } finally {
    release(p);
  }
}

// decref for a value that is usually ours alone: jansson's json_t is
// {json_type type; size_t refcount}, so a refcount of 1 (nobody else holds
// it) lets json_delete free it in one call; otherwise the general decref.
const REFCOUNT_OFFSET = 8;
function release(p) {
  const n = g.native;
  if (n.k.decode(p, REFCOUNT_OFFSET, 'size_t') === 1) n.json_delete(p);
  else decref(p);
}

// A copy of a cached context with this run's id (ours alone: json_delete).
function withRunId(base, runId) {
  const n = g.native;
  const c = n.json_deep_copy(base);
  if (isNull(c)) throw new Error('json_deep_copy failed (out of memory?)');
  const sv = n.json_string(runId);
  if (isNull(sv) || n.json_object_set_new(c, 'runId', sv) !== 0) {
    n.json_delete(c);
    throw new Error('cannot add runId to the context (out of memory, or not UTF-8)');
  }
  return c;
}

// The same on the calling thread (SYNC_HOOKS only); ctxPtr is a jansson
// value the caller keeps.
let resultSlot = null;
const slotFns = new Map();
function callHandlerSync(inst, fnPtr, evPtr, ctxPtr) {
  const n = g.native;
  const k = n.k;
  const key = String(fnPtr);
  let f = slotFns.get(key);
  if (!f) slotFns.set(key, (f = k.decode(fnPtr, n.HandlerSlotFn)));
  if (!resultSlot) resultSlot = k.alloc('void *', 1);
  k.encode(resultSlot, 'void *', null);
  const status = f(inst.state, evPtr, ctxPtr, resultSlot);
  const out = k.decode(resultSlot, 'void *');
  return { status, result: isNull(out) ? undefined : takeResult(out) };
}

// ---- host callbacks (oc_host_api) -------------------------------------------------

function instanceOf(host) {
  return g.instances.get(Number(host));
}

function cbRegisterTool(host, toolPtr) {
  try {
    const inst = instanceOf(host);
    const n = g.native;
    if (!inst || !inst.initializing) {
      log(3, 'register_tool called outside init; the ABI allows it only inside init');
      return OC.INVALID;
    }
    if (isNull(toolPtr)) return OC.INVALID;
    const size = n.k.decode(toolPtr, 'uint32_t');
    if (size < n.k.sizeof(n.OcTool)) {
      log(3, `register_tool: oc_tool.struct_size ${size} is below ABI v1's ${n.k.sizeof(n.OcTool)}`);
      return OC.INVALID;
    }
    const t = n.k.decode(toolPtr, n.OcTool);
    if (typeof t.name !== 'string' || !t.name || isNull(t.execute)) {
      log(3, 'register_tool: a tool needs a name and an execute function');
      return OC.INVALID;
    }
    let parameters;
    try {
      parameters = JSON.parse(t.parameters ?? '');
    } catch (e) {
      log(3, `register_tool ${t.name}: parameters is not JSON (${e.message})`);
      return OC.INVALID;
    }
    if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) {
      log(3, `register_tool ${t.name}: parameters must be a JSON Schema object`);
      return OC.INVALID;
    }
    if (inst.tools.has(t.name)) return OC.CONFLICT;
    inst.tools.set(t.name, { description: t.description ?? '', parameters, execute: t.execute });
    return OC.OK;
  } catch (e) {
    log(3, `register_tool failed inside the bridge: ${e.stack ?? e}`);
    return OC.INTERNAL;
  }
}

function cbOn(host, hook, fn, priority) {
  try {
    const inst = instanceOf(host);
    if (!inst || !inst.initializing) {
      log(3, 'on() called outside init; the ABI allows it only inside init');
      return OC.INVALID;
    }
    if (!KNOWN_HOOKS.has(hook) || isNull(fn)) {
      log(2, `on("${hook}"): ${isNull(fn) ? 'NULL handler' : 'not a hook of ABI v1'}; refused`);
      return OC.INVALID;
    }
    inst.hooks.push({ hook, fn, priority: priority | 0, seq: inst.hooks.length });
    return OC.OK;
  } catch (e) {
    log(3, `on() failed inside the bridge: ${e.stack ?? e}`);
    return OC.INTERNAL;
  }
}

function cbSessionPatch(host, key, provider, model) {
  try {
    if (!instanceOf(host)) return OC.INVALID;
    if (typeof key !== 'string' || !key) return OC.INVALID;
    const both = provider != null && model != null;
    if (!both && (provider != null || model != null)) {
      log(2, `session_patch ${key}: provider and model must both be set or both be NULL`);
      return OC.INVALID;
    }
    if (both && (!provider || !model)) return OC.INVALID;
    g.sessions.patch(key, both ? provider : null, both ? model : null);
    return OC.OK;
  } catch (e) {
    log(3, `session_patch failed: ${e.stack ?? e}`);
    return OC.IO;
  }
}

function cbSessionsList(host, channelId) {
  try {
    const list = instanceOf(host) && typeof channelId === 'string' ? g.sessions.list(channelId) : [];
    return toJson(list);
  } catch (e) {
    log(3, `sessions_list failed: ${e.stack ?? e}`);
    try {
      return toJson([]);
    } catch {
      return null;
    }
  }
}

// ---- ABI 1.1: session_reset and run_abort over OpenClaw's plugin SDK -----------------
//
// What OpenClaw 2026.9.6 offers an external plugin (README.md, "Admin
// commands" and "what is not done", lists what was searched and what is not
// there; bridge/openclaw/README.md item 18):
//   run_abort     openclaw/plugin-sdk/agent-harness: resolveActiveEmbeddedRunSessionId
//                 (session key -> the sessionId of its run in flight) and
//                 abortAgentHarnessRun(sessionId) (OpenClaw's abortEmbeddedAgentRun,
//                 the stop command's own call; true when a run was aborted).
//   session_reset openclaw/plugin-sdk/session-store-runtime: getSessionEntry and
//                 deleteSessionEntry (transcript archived): the key's entry goes,
//                 so the next message opens a fresh session with a new sessionId.
//                 OpenClaw's own reset (sessions.reset, /new, /reset) is not
//                 reachable: api.runtime.gateway.request refuses plugins that
//                 are not bundled or trusted official ones, and
//                 api.runtime.agent.session has no reset.
// OpenClaw aliases `openclaw/plugin-sdk/*` for a plugin's own files (module
// resolution hooks), so a resolve from here finds its dist. Resolving is
// cheap and decides at init whether the functions are offered; loading
// waits for the first owner command (inside a gateway the modules are
// already loaded by OpenClaw itself; cold, the harness graph took about 3 s
// here, which a one-shot CLI run never pays).
// Test seam: globalThis[Symbol.for('dirigent.openclaw-bridge.sdk')], an
// object with the four functions, replaces the SDK (unit.mjs).
const SDK_SEAM = Symbol.for('dirigent.openclaw-bridge.sdk');
const SDK_MODULES = {
  harness: 'openclaw/plugin-sdk/agent-harness',
  store: 'openclaw/plugin-sdk/session-store-runtime',
};
const sdkRequire = createRequire(import.meta.url);

// 1 when OpenClaw's SDK module for `which` can be found (no loading).
function sdkOffers(which) {
  if (globalThis[SDK_SEAM]) return true;
  try {
    sdkRequire.resolve(SDK_MODULES[which]);
    return true;
  } catch {
    return false;
  }
}

// The SDK's functions (loaded once, synchronously: a host call must answer
// before it returns). Throws when the module or a function is missing.
function openclawSdk(which) {
  const seam = globalThis[SDK_SEAM];
  if (seam) return seam;
  g.sdk ??= {};
  if (!g.sdk[which]) {
    const m = sdkRequire(SDK_MODULES[which]);
    const need = which === 'harness' ? ['resolveActiveEmbeddedRunSessionId', 'abortAgentHarnessRun']
      : ['getSessionEntry', 'deleteSessionEntry'];
    for (const f of need)
      if (typeof m[f] !== 'function') throw new Error(`${SDK_MODULES[which]} has no ${f}()`);
    g.sdk[which] = m;
  }
  return g.sdk[which];
}

// run_abort: the run in flight of the key's session, aborted as OpenClaw's
// stop does (its agent_end reports success false). Synchronous in OpenClaw.
function cbRunAbort(host, key) {
  try {
    if (!instanceOf(host) || typeof key !== 'string' || !key) return OC.INVALID;
    const sdk = openclawSdk('harness');
    const sessionId = sdk.resolveActiveEmbeddedRunSessionId(key);
    if (!sessionId) return OC.NOT_FOUND;
    return sdk.abortAgentHarnessRun(sessionId) ? OC.OK : OC.NOT_FOUND;
  } catch (e) {
    log(3, `run_abort ${key}: ${e.stack ?? e}`);
    return OC.IO;
  }
}

// session_reset: OC_ERR_NOT_FOUND when OpenClaw holds no entry for the key.
// The deletion itself is asynchronous in OpenClaw and a host call cannot
// wait for a promise (the main thread answers it): it is started here,
// bound to the entry's sessionId (expectedSessionId: a session that changed
// meanwhile is left alone), and its outcome logged. OpenClaw refuses to
// delete a session while a run of it is in flight ("retry after the run
// completes") -- and the owner's own `!dirigent rotate` message is being
// handled by every session of the scope at that moment -- and refuses one
// whose state a run wrote while the transcript was being archived ("state
// changed before archive materialization"), so a refusal of either kind is
// retried every RESET_RETRY_MS, at most RESET_RETRIES times.
// The persistent override of session_patch lives in the bridge's own
// journal and stays with the key.
const RESET_RETRY_MS = 1000;
const RESET_RETRIES = 300; // 5 minutes: longer than a run's usual model call
const BUSY_RE = /competing work is in flight|retry after the run completes|state changed before archive materialization/;
async function deleteWhenIdle(sdk, params) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await sdk.deleteSessionEntry(params);
    } catch (e) {
      if (attempt >= RESET_RETRIES || !BUSY_RE.test(String(e.message ?? e))) throw e;
      if (attempt === 0) log(0, `session_reset ${params.sessionKey}: a run is in flight; the reset waits for it`);
      await new Promise((r) => setTimeout(r, RESET_RETRY_MS));
    }
  }
}
function cbSessionReset(host, key) {
  try {
    if (!instanceOf(host) || typeof key !== 'string' || !key) return OC.INVALID;
    const sdk = openclawSdk('store');
    const entry = sdk.getSessionEntry({ sessionKey: key });
    if (!entry) return OC.NOT_FOUND;
    const expectedSessionId = typeof entry.sessionId === 'string' ? entry.sessionId : null;
    deleteWhenIdle(sdk, { sessionKey: key, expectedSessionId, archiveTranscript: true })
      .then((deleted) => log(deleted ? 1 : 2, deleted
        ? `session_reset ${key}: session ${expectedSessionId} ended (transcript archived); the next message opens a fresh one`
        : `session_reset ${key}: OpenClaw did not delete the entry (it changed meanwhile); nothing was reset`))
      .catch((e) => log(3, `session_reset ${key}: OpenClaw refused the deletion: ${e.message ?? e}`));
    return OC.OK;
  } catch (e) {
    log(3, `session_reset ${key}: ${e.stack ?? e}`);
    return OC.IO;
  }
}

function cbLog(host, level, message) {
  try {
    log(level >= 0 && level <= 3 ? level : 1, String(message ?? ''));
  } catch { /* never throw into C */ }
}

// ---- ABI 1.2: decide over OpenClaw's decision models ------------------------------
//
// decide(host, request, &answer) asks api.runtime.decisions.evaluate (OpenClaw
// 2026.9.6, docs/concepts/decision-models.md) one "choice" question:
//   {state: context, questions: {next: {type: "choice", instructions: question,
//    criteria: {<label>: <label>, ...}}}}
// with the global decisionModel selection (no agentId: the question is the
// chair's, not an agent's), purpose "dirigent.turn-judge", rubricVersion "1".
// ok -> {label: choice, probability: probabilities[choice], source:
// "openclaw:<providerId>/<model>", tokensIn/tokensOut from usage};
// unavailable "disabled"/"not-configured" -> OC_ERR_UNSUPPORTED (no decision
// model selected), "unsupported-input" -> OC_ERR_INVALID, any other reason, a
// timeout or a thrown error -> OC_ERR_IO.
//
// Threads. evaluate is asynchronous and runs on the main thread, but a
// registered callback must answer before it returns, and koffi runs a
// callback that a foreign thread calls on the thread that registered it.
// So decide is registered in a worker thread of its own (the decider): the
// plugin's thread calls it, koffi relays the call to the decider and blocks
// that plugin thread; the decider posts the request to the main thread and
// waits (Atomics.wait, at most the request's timeoutMs) for the answer,
// while the main thread's event loop stays free to run evaluate and every
// other host call. One decision at a time: a second plugin thread's decide
// waits in koffi's queue until the first returns. The decider is created
// once per process, on the first start with decisions, and never holds the
// process open (unref).
const DECIDE_PURPOSE = 'dirigent.turn-judge';
const DECIDE_RUBRIC_VERSION = '1';
const DECIDER_START_MS = 10_000;

// What is wrong with a decide request (field and rule), or null. Runs in
// the decider too (its source is copied there), so a malformed request is
// refused without a round trip.
function decideRequestError(r) {
  if (r === null || typeof r !== 'object' || Array.isArray(r)) return 'request: must be an object';
  for (const k of Object.keys(r))
    if (!['question', 'labels', 'context', 'timeoutMs'].includes(k)) return `request.${k}: unknown field`;
  if (typeof r.question !== 'string' || !r.question) return 'request.question: must be a non-empty string';
  if (!Array.isArray(r.labels) || r.labels.length < 2 || r.labels.length > 32)
    return 'request.labels: must be an array of 2..32 strings';
  if (r.labels.some((l) => typeof l !== 'string' || !l)) return 'request.labels: every label must be a non-empty string';
  if (new Set(r.labels).size !== r.labels.length) return 'request.labels: labels must be unique';
  if (typeof r.context !== 'string') return 'request.context: must be a string';
  if (!Number.isInteger(r.timeoutMs) || r.timeoutMs < 1 || r.timeoutMs > 60000)
    return 'request.timeoutMs: must be an integer 1..60000';
  return null;
}

// The decider's source (CommonJS, eval'd in the worker). workerData:
// {koffi, jansson: paths, port: its end of the channel, flag: Int32Array
// bumped by the main thread after each answer, ready: BigInt64Array where
// it stores the callback's address}.
const DECIDER_SOURCE = `
const { workerData, receiveMessageOnPort } = require('node:worker_threads');
const koffi = require(workerData.koffi);
const { port, flag, ready } = workerData;
const OC = ${JSON.stringify({ OK: OC.OK, INVALID: OC.INVALID, IO: OC.IO, NOMEM: OC.NOMEM, INTERNAL: OC.INTERNAL })};
const jl = koffi.load(workerData.jansson);
const libc = koffi.load('libc.so.6');
const jsonDumps = jl.func('void *json_dumps(void *json, size_t flags)');
const jsonLoads = jl.func('void *json_loads(const char *input, size_t flags, void *error)');
const free = libc.func('void free(void *ptr)');
${decideRequestError.toString()}
let seq = 0;
function decide(host, request, answer) {
  try {
    if (!request || !answer) return OC.INVALID;
    const s = jsonDumps(request, ${JSON_COMPACT | JSON_ENCODE_ANY});
    if (!s) return OC.NOMEM;
    let text;
    try { text = koffi.decode(s, 'char', -1); } finally { free(s); }
    let parsed;
    try { parsed = JSON.parse(text); } catch { parsed = undefined; }
    const bad = decideRequestError(parsed);
    if (bad) {
      port.postMessage({ log: 'decide refused a request: ' + bad + ' (OC_ERR_INVALID)' });
      return OC.INVALID;
    }
    const id = ++seq;
    const deadline = performance.now() + parsed.timeoutMs;
    port.postMessage({ seq: id, host: Number(host), request: parsed });
    for (;;) {
      const seen = Atomics.load(flag, 0);
      for (let m; (m = receiveMessageOnPort(port));) {
        if (m.message.seq !== id) continue; // a late answer to an earlier call
        if (m.message.status !== OC.OK) return m.message.status;
        const p = jsonLoads(JSON.stringify(m.message.answer), 0, null);
        if (!p) return OC.NOMEM;
        koffi.encode(answer, 'void *', p);
        return OC.OK;
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        port.postMessage({ expired: id });
        return OC.IO;
      }
      Atomics.wait(flag, 0, seen, Math.ceil(left));
    }
  } catch (e) {
    try { port.postMessage({ log: 'decide failed in the decider: ' + (e && e.stack || e) }); } catch {}
    return OC.INTERNAL;
  }
}
const cb = koffi.register(decide, koffi.pointer(koffi.proto('int dg_bridge_decide(void *host, void *request, void *answer)')));
setInterval(() => {}, 1 << 30); // koffi's relay needs this thread's event loop alive
Atomics.store(ready, 0, cb);
Atomics.notify(ready, 0);
`;

// The decide callback (an address for oc_host_api), starting the decider
// on first use; null when it cannot start (then the plugin sees no decide).
function deciderCallback() {
  if (g.decider) return g.decider.cb ?? null;
  const n = g.native;
  const { port1, port2 } = new MessageChannel();
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const ready = new BigInt64Array(new SharedArrayBuffer(8));
  let worker;
  try {
    worker = new Worker(DECIDER_SOURCE, {
      eval: true,
      workerData: { koffi: createRequire(import.meta.url).resolve('koffi'), jansson: n.janssonPath, port: port2, flag, ready },
      transferList: [port2],
    });
  } catch (e) {
    g.decider = { failed: String(e.message ?? e) };
    log(2, `decide not offered: the decider thread did not start (${g.decider.failed})`);
    return null;
  }
  let failure = null;
  worker.on('error', (e) => {
    failure = String(e.stack ?? e);
    log(3, `the decider thread failed: ${failure}`);
  });
  // Its start needs nothing of the main thread's event loop: wait for it
  // here, once, so init sees the pointer.
  const t0 = Date.now();
  while (Atomics.load(ready, 0) === 0n && Date.now() - t0 < DECIDER_START_MS) Atomics.wait(ready, 0, 0n, 50);
  const cb = Atomics.load(ready, 0);
  if (cb === 0n) {
    worker.terminate().catch(() => {});
    g.decider = { failed: failure ?? `not ready after ${DECIDER_START_MS} ms` };
    log(2, `decide not offered: the decider thread did not start (${g.decider.failed})`);
    return null;
  }
  worker.unref();
  port1.on('message', (m) => onDeciderMessage(port1, flag, m));
  port1.unref();
  g.decider = { worker, port: port1, flag, cb, expired: new Set() };
  return cb;
}

function onDeciderMessage(port, flag, m) {
  if (m.log) {
    log(2, m.log);
    return;
  }
  if (m.expired) {
    logOnce('decide-expired', 2, 'decide: no answer within the request\'s timeoutMs; OC_ERR_IO ' +
      '(a late result is dropped; logged once)');
    return;
  }
  answerDecision(m.host, m.request).then((reply) => {
    port.postMessage({ seq: m.seq, ...reply });
    Atomics.add(flag, 0, 1);
    Atomics.notify(flag, 0);
  });
}

// One evaluation on the main thread. Resolves to {status, answer?}; never rejects.
const unavailableStatus = (reason) => (reason === 'disabled' || reason === 'not-configured' ? OC.UNSUPPORTED
  : reason === 'unsupported-input' ? OC.INVALID : OC.IO);
async function answerDecision(host, request) {
  const decisions = g.decisions;
  if (!instanceOf(host) || !decisions) return { status: OC.UNSUPPORTED };
  try {
    const outcome = await decisions.evaluate({
      state: request.context,
      questions: { next: { type: 'choice', instructions: request.question,
        criteria: Object.fromEntries(request.labels.map((l) => [l, l])) } },
    }, { purpose: DECIDE_PURPOSE, rubricVersion: DECIDE_RUBRIC_VERSION, timeoutMs: request.timeoutMs,
      signal: AbortSignal.timeout(request.timeoutMs) });
    if (outcome?.status !== 'ok') {
      const reason = String(outcome?.reason ?? 'no outcome');
      logOnce(`decide-${reason}`, 2, `decide: OpenClaw's decision model is unavailable (${reason}); ` +
        `${statusName(unavailableStatus(reason))}${reason === 'disabled' || reason === 'not-configured'
          ? ' (select one with agents.defaults.decisionModel)' : ''}`);
      return { status: unavailableStatus(reason) };
    }
    const a = outcome.result?.answers?.next;
    if (a?.type !== 'choice' || !request.labels.includes(a.choice)) {
      logOnce('decide-shape', 2, 'decide: the decision model answered no label of the request; OC_ERR_IO');
      return { status: OC.IO };
    }
    const p = Number(a.probabilities?.[a.choice]);
    const usage = outcome.result.usage ?? {};
    return {
      status: OC.OK,
      answer: {
        label: a.choice,
        probability: Number.isFinite(p) ? Math.min(1, Math.max(0, p)) : 0,
        source: `openclaw:${outcome.provenance?.providerId ?? '?'}/${outcome.result.model}`,
        ...(Number.isFinite(usage.inputTokens) ? { tokensIn: Math.round(usage.inputTokens) } : {}),
        ...(Number.isFinite(usage.outputTokens) ? { tokensOut: Math.round(usage.outputTokens) } : {}),
      },
    };
  } catch (e) {
    const invalid = e?.name === 'DecisionContractError';
    logOnce(`decide-throw-${e?.name}`, 2, `decide: evaluate threw ${e?.name ?? 'an error'} (${e?.message ?? e}); ` +
      `${invalid ? 'OC_ERR_INVALID' : 'OC_ERR_IO'}`);
    return { status: invalid ? OC.INVALID : OC.IO };
  }
}

// A cause logged once per process (the plugin logs its own fallback).
const loggedOnce = new Set();
function logOnce(key, level, message) {
  if (loggedOnce.has(key)) return;
  loggedOnce.add(key);
  log(level, message);
}

// OpenClaw's decision runtime, when this registration has one (2026.9.6:
// api.runtime.decisions; older releases: none, and decide stays NULL).
function decisionRuntime(api) {
  try {
    const d = api.runtime?.decisions;
    return d && typeof d.evaluate === 'function' ? d : null;
  } catch {
    return null;
  }
}

// ---- instances -------------------------------------------------------------------

function initInstance(nativeConfig) {
  const n = g.native;
  const k = n.k;
  const id = ++g.nextHostId;
  const inst = { id, state: null, api: null, tools: new Map(), hooks: [], inflight: 0, idle: null, initializing: true };
  g.instances.set(id, inst);
  const api = k.alloc(n.OcHostApi, 1);
  // The 1.1 functions only where OpenClaw has what they need: NULL makes
  // the plugin say "not supported by this host" (OC_HOST_API_HAS).
  k.encode(api, n.OcHostApi, {
    abi_major: ABI_MAJOR, abi_minor: ABI_MINOR, struct_size: k.sizeof(n.OcHostApi),
    host: BigInt(id), ...n.cb,
    session_reset: sdkOffers('store') ? n.cb.session_reset : null,
    run_abort: sdkOffers('harness') ? n.cb.run_abort : null,
    decide: g.decisions ? deciderCallback() : null,
  });
  const cfg = toJson(nativeConfig);
  const stateOut = [null];
  const err = Buffer.alloc(ERR_LEN);
  let rc;
  try {
    rc = n.init(api, cfg, stateOut, err, ERR_LEN);
  } finally {
    decref(cfg);
    inst.initializing = false;
  }
  if (rc !== OC.OK) {
    g.instances.delete(id);
    k.free(api);
    const nul = err.indexOf(0);
    const reason = err.toString('utf8', 0, nul < 0 ? ERR_LEN : nul) || 'no reason given';
    throw new Error(`${n.soPath} refused to start (${statusName(rc)}): ${reason}`);
  }
  inst.state = stateOut[0];
  inst.api = api;
  inst.hooks.sort((a, b) => b.priority - a.priority || a.seq - b.seq);
  const surface = {
    tools: new Map([...inst.tools].map(([name, t]) => [name, { description: t.description, parameters: t.parameters }])),
    hooks: inst.hooks.map((h) => ({ hook: h.hook, priority: h.priority })),
  };
  if (!g.surface) {
    g.surface = surface;
  } else if (JSON.stringify([...g.surface.tools.keys()]) !== JSON.stringify([...surface.tools.keys()]) ||
             JSON.stringify(g.surface.hooks) !== JSON.stringify(surface.hooks)) {
    log(3, 'the restarted plugin registered other tools or hooks than the first start; ' +
      'OpenClaw keeps the first set until the gateway restarts');
  }
  log(1, `${path.basename(n.soPath)} ${n.table.id} ${n.table.version} started (host ${id}): ` +
    `tools [${[...inst.tools.keys()].join(', ')}], hooks [${inst.hooks.map((h) => `${h.hook}@${h.priority}`).join(', ')}]`);
  return inst;
}

// The instance calls go to, started on demand (after a one-shot shutdown).
async function liveInstance() {
  while (g.transition) await g.transition;
  if (!g.instance) {
    if (g.stopped) throw new Error('the plugin was stopped with the gateway');
    g.instance = initInstance(g.nativeConfig);
  }
  return g.instance;
}

async function withInstance(fn) {
  const inst = await liveInstance();
  inst.inflight += 1;
  try {
    return await fn(inst);
  } finally {
    inst.inflight -= 1;
    if (inst.inflight === 0 && inst.idle) inst.idle();
  }
}

// Waits until no call is in flight, then shuts the plugin down on a worker
// thread (its threads may call the host while they stop; the main thread
// stays free to serve them).
async function shutdownInstance(reason) {
  while (g.transition) await g.transition;
  const inst = g.instance;
  if (!inst) return;
  g.instance = null;
  const n = g.native;
  g.transition = (async () => {
    while (inst.inflight > 0) await new Promise((r) => { inst.idle = r; });
    log(0, `shutting down host ${inst.id}: ${reason}`);
    try {
      await callAsync(n.shutdown, inst.state);
    } finally {
      g.instances.delete(inst.id);
      n.k.free(inst.api);
    }
  })();
  try {
    await g.transition;
  } finally {
    g.transition = null;
  }
}

// ---- sessions: seen keys and persistent overrides ----------------------------------

// The chat platforms Dirigent manages; a hook of any other (Telegram, ...)
// never reaches the plugin (foreignProvider).
const MANAGED_PROVIDERS = new Set(['discord', 'slack']);
const KEY_RE = /^agent:([^:]+):(discord|slack):channel:([^:]+)(?::thread:([^:]+))?$/;
const DM_RE = /^agent:([^:]+):(discord|slack):direct:([^:]+)$/;

// OpenClaw lower-cases Slack ids inside session keys
// ("agent:planner:slack:channel:c0work0001"); Slack ids are all upper case,
// and the plugin, the fake and Slack itself name them so.
const platformId = (provider, id) => (provider === 'slack' ? id.toUpperCase() : id);

function parseSessionKey(key) {
  if (typeof key !== 'string') return null;
  let m = KEY_RE.exec(key);
  if (m) return { agentId: m[1], provider: m[2], channelId: platformId(m[2], m[3]), threadId: m[4], isDm: false };
  m = DM_RE.exec(key);
  if (m) return { agentId: m[1], provider: m[2], peerId: platformId(m[2], m[3]), isDm: true };
  return null;
}

// A channel id out of OpenClaw's channel-ish strings: "123", "channel:123",
// "123:thread:456" (OpenClaw's channelId for a thread key), and the same
// with a Slack channel id ("channel:C0WORK0001", "c0work0001:thread:1712345678.123456").
// A Slack id needs a digit here: "discord" or "direct" are names, not ids.
function channelFrom(v) {
  if (typeof v !== 'string') return undefined;
  let m = /^(?:channel:)?(\d+)(?::thread:\d+)?$/.exec(v);
  if (m) return m[1];
  m = /^(?:channel:)?([CGD][A-Z0-9]{2,20})(?::thread:\d+(?:\.\d+)?)?$/i.exec(v);
  return m && /\d/.test(m[1]) ? m[1].toUpperCase() : undefined;
}

// Sessions seen and overrides live in one append-only journal (JSON lines,
// `{"k": sessionKey, "s": {...}}`, the last line of a key wins) so that
// they survive the one-process-per-turn CLI (openclaw agent --local) and
// are shared by every OpenClaw process on the machine. A hook call costs no
// I/O: lookups hit the in-memory map; a new session or an override is one
// appended line (O_APPEND writes of one line do not interleave); other
// processes' lines are read at most once per REFRESH_MS; the journal is
// rewritten (tmp + rename) only when stale lines outnumber live ones, so
// registering N sessions costs O(N), not the O(N^2) of rewriting a whole
// file per new session.
const REFRESH_MS = 1000;
const COMPACT_SLACK = 1024;

class SessionStore {
  constructor(file) {
    this.file = file;
    this.sessions = new Map();
    this.lines = 0;
    this.offset = 0;
    this.ino = -1;
    this.checkedAt = 0;
    this.reload();
  }

  // Reads the journal from `from` (0: everything). A torn last line (a
  // writer died mid-line) is skipped; the next whole line goes on.
  readFrom(from) {
    let fd;
    try {
      fd = fs.openSync(this.file, 'r');
    } catch {
      return;
    }
    try {
      const st = fs.fstatSync(fd);
      if (from === 0 || st.ino !== this.ino || st.size < this.offset) {
        this.sessions.clear();
        this.lines = 0;
        from = 0;
      }
      this.ino = st.ino;
      const size = st.size - from;
      if (size <= 0) {
        this.offset = st.size;
        return;
      }
      const buf = Buffer.alloc(size);
      const got = fs.readSync(fd, buf, 0, size, from);
      const text = buf.toString('utf8', 0, got);
      const lastNl = text.lastIndexOf('\n');
      this.offset = from + (lastNl < 0 ? 0 : Buffer.byteLength(text.slice(0, lastNl + 1)));
      for (const line of text.slice(0, lastNl + 1).split('\n')) {
        if (!line) continue;
        try {
          const r = JSON.parse(line);
          if (r && typeof r.k === 'string' && r.s && typeof r.s === 'object') {
            this.sessions.set(r.k, r.s);
            this.lines += 1;
          }
        } catch {
          log(2, `session journal ${this.file}: an unreadable line was skipped`);
        }
      }
    } finally {
      fs.closeSync(fd);
    }
  }

  reload() {
    this.readFrom(0);
    this.checkedAt = Date.now();
  }

  // Other processes' appends, at most once per REFRESH_MS.
  refresh() {
    const now = Date.now();
    if (now - this.checkedAt < REFRESH_MS) return;
    this.checkedAt = now;
    this.readFrom(this.offset);
  }

  append(key, s) {
    this.sessions.set(key, s);
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    const line = Buffer.from(`${JSON.stringify({ k: key, s })}\n`);
    const fd = fs.openSync(this.file, 'a');
    try {
      fs.writeSync(fd, line);
      const st = fs.fstatSync(fd);
      // Nobody else appended since our last read: skip our own line.
      if (st.ino === this.ino && st.size - line.length === this.offset) this.offset = st.size;
      else if (this.ino === -1 && st.size === line.length) {
        this.ino = st.ino;
        this.offset = st.size;
      }
    } finally {
      fs.closeSync(fd);
    }
    this.lines += 1;
    if (this.lines > 2 * this.sessions.size + COMPACT_SLACK) this.compact();
  }

  compact() {
    this.readFrom(this.offset); // take other processes' lines along
    const tmp = `${this.file}.tmp-${process.pid}`;
    let text = '';
    for (const [k, s] of this.sessions) text += `${JSON.stringify({ k, s })}\n`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, this.file);
    const st = fs.statSync(this.file);
    this.ino = st.ino;
    this.offset = st.size;
    this.lines = this.sessions.size;
  }

  see(ctx) {
    const key = ctx && ctx.sessionKey;
    if (typeof key !== 'string' || this.sessions.has(key)) return;
    const p = parseSessionKey(key);
    if (!p || p.isDm) return;
    this.append(key, { agentId: p.agentId, channelId: p.channelId, ...(p.threadId ? { threadId: p.threadId } : {}) });
  }

  patch(key, provider, model) {
    this.refresh();
    const p = parseSessionKey(key);
    const cur = { ...(this.sessions.get(key) ?? (p && !p.isDm
      ? { agentId: p.agentId, channelId: p.channelId, ...(p.threadId ? { threadId: p.threadId } : {}) }
      : {})) };
    if (provider) {
      cur.providerOverride = provider;
      cur.modelOverride = model;
    } else {
      delete cur.providerOverride;
      delete cur.modelOverride;
    }
    this.append(key, cur);
  }

  get(key) {
    this.refresh();
    return this.sessions.get(key);
  }

  override(key) {
    const s = this.get(key);
    return s && s.providerOverride ? { providerOverride: s.providerOverride, modelOverride: s.modelOverride } : undefined;
  }

  list(channelId) {
    this.refresh();
    const out = [];
    for (const [sessionKey, s] of this.sessions) {
      if (s.channelId !== channelId || !s.agentId) continue;
      out.push({ sessionKey, agentId: s.agentId, channelId: s.channelId, ...(s.threadId ? { threadId: s.threadId } : {}) });
    }
    return out;
  }
}

function defaultStateFile(nativeConfig) {
  const db = typeof nativeConfig.dbPath === 'string' ? nativeConfig.dbPath
    : path.join(process.env.DIRIGENT_STATE_DIR || process.cwd(), 'dirigent.db');
  return path.join(path.dirname(path.resolve(db)), 'dirigent-openclaw-sessions.jsonl');
}

// ---- OpenClaw -> ABI translation ----------------------------------------------------

const compact = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));

// Agent-hook context under the ABI's names. OpenClaw's own channelId is
// "<c>:thread:<t>" for a thread key and absent or the provider name
// ("discord") on other paths, so the session key decides when it parses.
function agentCtx(octx = {}) {
  const p = parseSessionKey(octx.sessionKey);
  return compact({
    agentId: octx.agentId ?? p?.agentId,
    sessionKey: octx.sessionKey,
    sessionId: octx.sessionId,
    workspaceDir: octx.workspaceDir,
    channelId: p && !p.isDm ? p.channelId : channelFrom(octx.channelId) ?? channelFrom(octx.conversationId),
    threadId: p?.threadId ?? (octx.threadId != null ? String(octx.threadId) : undefined),
    accountId: octx.accountId,
    runId: typeof octx.runId === 'string' && octx.runId ? octx.runId : undefined,
    messageProvider: octx.messageProvider ?? octx.channel ?? p?.provider ??
      (/^[a-z][a-z0-9-]*$/.test(octx.channelId ?? '') ? octx.channelId : undefined),
  });
}

// agentCtx of the decision path, cached by the OpenClaw fields it reads:
// a run asks several times and a session's fields repeat, and renaming
// costs more than the decision itself. The entry also carries the jansson
// value of the renamed context (created on first use, ours). Bounded.
// runId is not part of the key: every run has its own, and the entry's
// jansson value gets it added per call (json_deep_copy + one field), which
// costs a fraction of renaming and parsing the whole context again.
const CTX_FIELDS = ['agentId', 'sessionKey', 'sessionId', 'workspaceDir', 'channelId', 'threadId',
  'conversationId', 'accountId', 'messageProvider', 'channel'];
const CTX_CACHE_MAX = 256;
const ctxCache = new Map(); // field values joined -> {ctx, ptr}

// OpenClaw hands every handler of one hook call the same context object:
// the bridge's own before_model_resolve and the plugin's share one entry.
const ctxByObject = new WeakMap();

function agentCtxEntry(octx = {}) {
  const known = ctxByObject.get(octx);
  if (known) return known;
  const e = agentCtxEntryByFields(octx);
  ctxByObject.set(octx, e);
  return e;
}

function agentCtxEntryByFields(octx) {
  let key = '';
  for (const f of CTX_FIELDS) {
    const v = octx[f];
    key += `${v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v)}\u001f`;
  }
  let e = ctxCache.get(key);
  if (e) return e;
  const { runId, ...rest } = octx;
  e = { ctx: agentCtx(rest), ptr: null };
  ctxCache.set(key, e);
  if (ctxCache.size > CTX_CACHE_MAX) {
    const [oldest, old] = ctxCache.entries().next().value;
    ctxCache.delete(oldest);
    if (old.ptr) decref(old.ptr);
  }
  return e;
}

function toolCtx(octx = {}) {
  const p = parseSessionKey(octx.sessionKey);
  const dc = octx.deliveryContext ?? {};
  return compact({
    agentId: octx.agentId ?? p?.agentId,
    sessionKey: octx.sessionKey,
    sessionId: octx.sessionId,
    workspaceDir: octx.workspaceDir,
    channelId: p && !p.isDm ? p.channelId : channelFrom(octx.nativeChannelId) ?? channelFrom(dc.to),
    threadId: p?.threadId ?? (dc.threadId != null ? String(dc.threadId) : undefined),
    accountId: dc.accountId ?? octx.accountId,
    senderIsOwner: typeof octx.senderIsOwner === 'boolean' ? octx.senderIsOwner : undefined,
  });
}

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter((c) => c && c.type === 'text' && typeof c.text === 'string').map((c) => c.text).join('');
}

// agent_end: OpenClaw hands the whole transcript; the ABI wants this run's
// final assistant text and its number of tool calls. The run starts after
// the last user message.
function agentEndEvent(ev = {}, octx = {}) {
  const msgs = Array.isArray(ev.messages) ? ev.messages : [];
  let start = 0;
  for (let i = msgs.length - 1; i >= 0; i--) {
    if (msgs[i] && msgs[i].role === 'user') {
      start = i + 1;
      break;
    }
  }
  let toolCalls = 0;
  let output = '';
  for (const m of msgs.slice(start)) {
    if (!m || m.role !== 'assistant') continue;
    const parts = Array.isArray(m.content) ? m.content : [];
    toolCalls += parts.filter((c) => c && (c.type === 'toolCall' || c.type === 'tool_use')).length;
    if (Array.isArray(m.tool_calls)) toolCalls += m.tool_calls.length;
    output = textOf(m.content);
  }
  return compact({ runId: ev.runId ?? octx.runId, success: ev.success !== false, output, toolCalls });
}

// The chat platform of a message or delivery context: the session key's
// provider, else OpenClaw's channelId / metadata naming it.
function providerOf(ev = {}, octx = {}) {
  const p = parseSessionKey(ev.sessionKey ?? octx.sessionKey);
  if (p) return p.provider;
  const md = ev.metadata ?? {};
  for (const v of [octx.messageProvider, octx.channelId, md.provider, md.surface, md.originatingChannel])
    if (typeof v === 'string' && MANAGED_PROVIDERS.has(v.toLowerCase())) return v.toLowerCase();
  return undefined;
}

// Slack mentions: <@U...> and <@U...|name> (user ids U or W, upper case).
const SLACK_MENTION_RE = /<@([UW][A-Z0-9]{2,20})(?:\|[^>]*)?>/gi;
// OpenClaw's Slack channel renders a mention whose user it could look up
// as "<@U...> (name)" in the text agents read (prepare-content of
// @openclaw/slack); the plugin gets Slack's own text back.
const unrenderSlackMentions = (text) => text.replace(/<@([UW][A-Z0-9]{2,20})> \([^()\n]*\)/gi, '<@$1>');

// message_received in the plugin's shape. slackText: the message's text as
// before_dispatch saw it (Slack only: OpenClaw's own message_received
// content has every <@U...> cut out; see slackText below).
function messageReceivedEvent(ev = {}, octx = {}, slackText = undefined) {
  const md = ev.metadata ?? {};
  const p = parseSessionKey(ev.sessionKey ?? octx.sessionKey);
  const slack = providerOf(ev, octx) === 'slack';
  let content = typeof ev.content === 'string' ? ev.content : '';
  if (slack) content = unrenderSlackMentions(typeof slackText === 'string' ? slackText : content);
  const mentions = slack
    ? [...new Set([...content.matchAll(SLACK_MENTION_RE)].map((m) => m[1].toUpperCase()))]
    : [...new Set([...content.matchAll(/<@!?(\d+)>/g)].map((m) => m[1]))];
  const channelId = p && !p.isDm ? p.channelId : channelFrom(md.to) ?? channelFrom(octx.conversationId);
  const messageId = ev.messageId ?? md.messageId;
  let threadId = ev.threadId != null ? String(ev.threadId) : p?.threadId;
  // OpenClaw routes a Discord thread as a channel session of its own
  // (`...:channel:<threadId>`, no parent in the key or the event): the
  // agent hooks then name the thread as the channel, so the message must
  // too, or its scope would not be the one the agents' runs are decided in.
  if (threadId !== undefined && threadId === channelId) threadId = undefined;
  // Slack: a top-level message that OpenClaw answers in a thread of its own
  // (replyToMode "all") has its own ts as MessageThreadId, but its session
  // key is the channel's: it is no thread message.
  if (slack && threadId !== undefined && threadId === messageId && !p?.threadId) threadId = undefined;
  const senderId = ev.senderId ?? md.senderId;
  return compact({
    messageId,
    channelId,
    threadId,
    guildId: slack ? undefined : md.guildId,
    isDm: p ? p.isDm : /^(user|direct|dm):/.test(String(md.to ?? octx.conversationId ?? '')),
    senderId,
    // Gateway events carry no bot flag: a sender is a bot when the
    // plugin's config names it (an agent's discordUserId or slackUserId,
    // the moderator of either platform).
    senderIsBot: md.senderIsBot === true || md.isBot === true || knownBots().has(String(senderId ?? '')),
    content,
    mentions,
  });
}

// OpenClaw's own notices, sent as if the agent had written them when a run
// ends without a visible answer or fails (seen in gateway runs; texts of
// openclaw 2026.9.6). Not every one comes with payload.isError, and the
// no-visible-reply fallback reaches only message_sending: the bridge marks
// them isError so the plugin can keep them out of managed channels.
const HOST_NOTICE_PREFIXES = [
  "⚠️ OpenClaw couldn't produce or deliver a reply",
  "⚠️ Agent couldn't generate a response",
  'I finished the turn, but it did not produce a visible reply',
  '⚠️ Something went wrong while processing your request',
  'Something went wrong while processing your message',
  'agent run superseded by a newer session writer',
  '⚠️ This turn was interrupted because it stopped making progress',
  '⚠️ Previous run is still shutting down',
  'This message was not queued because the session queue is full',
];
const isHostNotice = (text) => typeof text === 'string' && HOST_NOTICE_PREFIXES.some((p) => text.startsWith(p));

// Discord and Slack user ids the plugin's config names as bots, cached per
// config (the two never overlap: snowflakes, U.../W... ids).
let botIdsFor = null;
let botIds = new Set();
function knownBots() {
  const cfg = g.nativeConfig;
  if (cfg === botIdsFor) return botIds;
  botIdsFor = cfg;
  botIds = new Set();
  for (const a of Object.values((cfg && cfg.agents) || {})) {
    if (a && typeof a.discordUserId === 'string') botIds.add(a.discordUserId);
    if (a && typeof a.slackUserId === 'string') botIds.add(a.slackUserId);
  }
  for (const platform of ['discord', 'slack']) {
    const mod = cfg && cfg[platform] && cfg[platform].moderatorUserId;
    if (typeof mod === 'string') botIds.add(mod);
  }
  return botIds;
}

function hookEvent(hook, ev = {}, octx = {}) {
  switch (hook) {
  case 'before_agent_reply':
    return compact({ cleanedBody: typeof ev.cleanedBody === 'string' ? ev.cleanedBody : undefined });
  case 'reply_payload_sending': {
    const pl = ev.payload && typeof ev.payload === 'object' ? ev.payload : {};
    return compact({
      payload: compact({ text: typeof pl.text === 'string' ? pl.text : '',
        isError: pl.isError === true || isHostNotice(pl.text) ? true : undefined }),
      kind: typeof ev.kind === 'string' ? ev.kind : undefined,
      runId: typeof ev.runId === 'string' ? ev.runId : undefined,
      sessionKey: typeof ev.sessionKey === 'string' ? ev.sessionKey : undefined,
    });
  }
  case 'before_model_resolve':
    return compact({ prompt: typeof ev.prompt === 'string' ? ev.prompt : undefined });
  case 'before_prompt_build':
    return compact({
      prompt: typeof ev.prompt === 'string' ? ev.prompt : undefined,
      systemPrompt: typeof ev.systemPrompt === 'string' ? ev.systemPrompt : undefined,
    });
  case 'message_sending':
    return compact({
      to: ev.to != null ? String(ev.to) : undefined,
      content: typeof ev.content === 'string' ? ev.content : '',
      threadId: ev.threadId != null ? String(ev.threadId) : undefined,
      isError: isHostNotice(ev.content) ? true : undefined,
    });
  case 'agent_end':
    return agentEndEvent(ev, octx);
  case 'message_received':
    return messageReceivedEvent(ev, octx);
  case 'model_call_ended':
  case 'llm_output':
    return usageEvent(hook, ev);
  default:
    return {};
  }
}

// The usage hooks (cost ledger): the run, the model and, for llm_output,
// the token counts; nothing of the prompt or the answer crosses.
function usageEvent(hook, ev) {
  const str = (v) => (typeof v === 'string' && v ? v : undefined);
  const count = (v) => (Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined);
  const u = ev.usage && typeof ev.usage === 'object' ? ev.usage : null;
  return compact({
    runId: str(ev.runId),
    sessionKey: str(ev.sessionKey),
    provider: str(ev.provider),
    model: str(ev.model),
    outcome: hook === 'model_call_ended' ? str(ev.outcome) : undefined,
    usage: hook === 'llm_output' && u ? compact({ input: count(u.input), output: count(u.output),
      cacheRead: count(u.cacheRead), cacheWrite: count(u.cacheWrite) }) : undefined,
  });
}

function hookCtx(hook, ev = {}, octx = {}) {
  if (hook === 'gateway_start' || hook === 'gateway_stop') return {};
  if (hook === 'message_received') {
    const e = messageReceivedEvent(ev, octx);
    // OpenClaw fires message_received once per agent session: the session
    // key tells the plugin which agent this report is for (its wait for a
    // wake message ends on the moderator's message reaching that agent).
    return compact({ channelId: e.channelId, accountId: octx.accountId,
      sessionKey: ev.sessionKey ?? octx.sessionKey, messageProvider: providerOf(ev, octx) });
  }
  // message_sending's and reply_payload_sending's OpenClaw context is a
  // message context without agentId: the session key names the agent.
  return agentCtx({ ...octx, sessionKey: octx.sessionKey ?? ev.sessionKey, runId: octx.runId ?? ev.runId });
}

// hookResult of the synchronous path, by the (cached, shared) result value.
const hookResultMemo = new Map(); // hook -> Map(result value -> answer)
function hookResultCached(hook, r) {
  if (!r || typeof r !== 'object') return undefined;
  let m = hookResultMemo.get(hook);
  if (!m) hookResultMemo.set(hook, (m = new Map()));
  let a = m.get(r);
  if (a === undefined && !m.has(r)) {
    a = hookResult(hook, r);
    if (m.size < INPUT_CACHE_MAX) m.set(r, a);
  }
  // A copy: the host may change what it gets.
  return a && { ...a };
}

// Only the result fields the ABI defines for each hook reach OpenClaw.
function hookResult(hook, r) {
  if (!r || typeof r !== 'object') return undefined;
  switch (hook) {
  case 'before_model_resolve': {
    const o = compact({
      providerOverride: typeof r.providerOverride === 'string' ? r.providerOverride : undefined,
      modelOverride: typeof r.modelOverride === 'string' ? r.modelOverride : undefined,
    });
    return Object.keys(o).length ? o : undefined;
  }
  case 'before_prompt_build': {
    const o = compact({
      appendSystemContext: typeof r.appendSystemContext === 'string' ? r.appendSystemContext : undefined,
      prependContext: typeof r.prependContext === 'string' ? r.prependContext : undefined,
    });
    return Object.keys(o).length ? o : undefined;
  }
  case 'message_sending':
    if (r.cancel === true) return compact({ cancel: true, cancelReason: typeof r.cancelReason === 'string' ? r.cancelReason : undefined });
    if (typeof r.content === 'string') return { content: r.content };
    return undefined;
  case 'before_agent_reply':
    // Claimed without a reply: no model call, the inbound message stays
    // in the agent's transcript; the fallback text OpenClaw then sends is
    // cancelled by reply_payload_sending.
    return r.handled === true ? compact({ handled: true, reason: typeof r.reason === 'string' ? r.reason : undefined }) : undefined;
  case 'reply_payload_sending':
    if (r.cancel === true) return compact({ cancel: true, reason: typeof r.reason === 'string' ? r.reason : undefined });
    return undefined;
  default:
    return undefined;
  }
}

// ---- dispatch -------------------------------------------------------------------------

async function runHook(inst, reg, ev, ctx) {
  const { status, result } = await callHandler(inst, reg.fn, ev, ctx);
  if (status !== OC.OK) {
    const msg = result && result.error && result.error.message;
    log(2, `hook ${reg.hook} returned ${statusName(status)}${msg ? `: ${msg}` : ''}; treated as no result`);
    return undefined;
  }
  return result;
}

function seeSession(octx) {
  try {
    g.sessions.see(octx);
  } catch (e) {
    log(2, `cannot record session ${octx && octx.sessionKey}: ${e.message}`);
  }
}

// Ingests in flight per channel. OpenClaw fires message_received without
// waiting for it and starts the agents' runs at once, so a run's decision
// (before_agent_reply, before_model_resolve) could otherwise be taken before
// the plugin has seen the message the run answers: the speaker would be
// claimed as if the scope were still asleep. Decisions for a channel wait
// for the ingests of that channel that started before them.
const pendingIngest = new Map(); // channelId -> Set of promises

function trackIngest(channelId, promise) {
  if (!channelId) return promise;
  let set = pendingIngest.get(channelId);
  if (!set) pendingIngest.set(channelId, (set = new Set()));
  set.add(promise);
  const done = () => {
    set.delete(promise);
    if (set.size === 0 && pendingIngest.get(channelId) === set) pendingIngest.delete(channelId);
  };
  promise.then(done, done);
  return promise;
}

async function ingestsBefore(channelId) {
  const set = channelId && pendingIngest.get(channelId);
  if (set && set.size) await Promise.allSettled([...set]);
}

// Traffic of another chat platform (Telegram, WhatsApp, ...) in the same
// gateway: Dirigent manages Discord and Slack channels only, so such hooks
// never reach the plugin (it would otherwise read another platform's
// conversation as one of its own and hold replies back). Named by
// messageProvider, by the provider field of the session key
// ("agent:<id>:telegram:direct:42"), or by the gateway shape's channelId,
// which names the provider there (and a Slack channel id elsewhere).
function foreignProvider(oev = {}, octx = {}) {
  const other = (p) => typeof p === 'string' && p !== '' && !MANAGED_PROVIDERS.has(p.toLowerCase());
  if (typeof octx.messageProvider === 'string' && octx.messageProvider)
    return other(octx.messageProvider) ? octx.messageProvider : null;
  const key = typeof octx.sessionKey === 'string' ? octx.sessionKey
    : typeof oev.sessionKey === 'string' ? oev.sessionKey : '';
  const m = /^agent:[^:]+:([^:]+):(?:channel|direct|group|dm):/.exec(key);
  if (m) return other(m[1]) ? m[1] : null;
  const ch = octx.channelId;
  if (typeof ch === 'string' && /^[a-z][a-z0-9_-]*$/i.test(ch) && !channelFrom(ch) && other(ch)) return ch;
  return null;
}

// What OpenClaw hands the hooks of a Slack conversation, once per hook and
// process, at debug level: the event's field names and the context's plain
// values (no text), so a gateway log shows the shape the bridge reads.
const slackShapesLogged = new Set();
function noteSlackShape(hook, oev, octx) {
  if (slackShapesLogged.size >= 16 || slackShapesLogged.has(hook) || providerOf(oev, octx) !== 'slack') return;
  slackShapesLogged.add(hook);
  const plain = Object.fromEntries(Object.entries(octx ?? {}).filter(([k, v]) =>
    v !== null && typeof v !== 'object' && typeof v !== 'function' && !/content|body|text|prompt/i.test(k)));
  log(0, `slack ${hook}: OpenClaw event fields [${Object.keys(oev ?? {}).join(', ')}], context ${JSON.stringify(plain)}`);
}

// A modify hook: one OpenClaw registration per native registration (seq).
async function dispatchModify(seq, hook, oev, octx) {
  if (foreignProvider(oev, octx)) return undefined;
  noteSlackShape(hook, oev, octx);
  try {
    const ctx = hookCtx(hook, oev, octx);
    seeSession(ctx);
    await ingestsBefore(ctx.channelId);
    const ev = hookEvent(hook, oev, octx);
    return await withInstance(async (inst) => {
      // inst.hooks is sorted like g.surface.hooks, so position seq is the
      // same registration in every instance of this plugin.
      const reg = inst.hooks[seq];
      if (!reg || reg.hook !== hook) return undefined;
      return hookResult(hook, await runHook(inst, reg, ev, ctx));
    });
  } catch (e) {
    log(3, `${hook} failed in the bridge: ${e.stack ?? e}`);
    return undefined;
  }
}

// Hooks decided synchronously on the calling (main) thread (SYNC_HOOKS, as
// the plugin's manifest declares them) when nothing is in the way: a decision that only reads the plugin's turn state costs a
// few microseconds this way, against a thread hop and a promise round trip
// of ~30 us through koffi's .async. Safe only because the plugin declares
// it: such a hook never waits for a lock held by a thread that calls the
// host (Dirigent's own threads and store transactions log through its log
// pump), so the main thread waiting for the plugin can never wait for a
// thread that waits for the main thread. Only before_model_resolve is
// taken this way (the one decision hosts ask for on every model call).

function dispatchModifyFast(seq, hook, oev, octx) {
  if (foreignProvider(oev, octx)) return undefined;
  if (slackShapesLogged.size < 16) noteSlackShape(hook, oev, octx);
  const ce = agentCtxEntry(octx);
  const ctx = ce.ctx;
  const inst = g.instance;
  const ch = ctx.channelId;
  if (!inst || g.transition || (ch && pendingIngest.has(ch))) return dispatchModify(seq, hook, oev, octx);
  try {
    seeSession(ctx);
    const reg = inst.hooks[seq];
    if (!reg || reg.hook !== hook) return undefined;
    // before_model_resolve's event is {prompt?}: cached by the prompt itself
    // (a string's hash is computed once), other events by their JSON text.
    const evPtr = hook === 'before_model_resolve'
      ? promptEvent(oev && typeof oev.prompt === 'string' ? oev.prompt : undefined)
      : cachedJson(hookEvent(hook, oev, octx));
    if (!ce.ptr) ce.ptr = toJson(ctx); /* ours, released on eviction */
    const runId = typeof octx.runId === 'string' && octx.runId ? octx.runId : undefined;
    const ctxPtr = runId ? withRunId(ce.ptr, runId) : ce.ptr;
    inst.inflight += 1;
    let r;
    try {
      r = callHandlerSync(inst, reg.fn, evPtr, ctxPtr);
    } finally {
      if (ctxPtr !== ce.ptr) g.native.json_delete(ctxPtr);
      inst.inflight -= 1;
      if (inst.inflight === 0 && inst.idle) inst.idle();
    }
    if (r.status !== OC.OK) {
      const msg = r.result && r.result.error && r.result.error.message;
      log(2, `hook ${hook} returned ${statusName(r.status)}${msg ? `: ${msg}` : ''}; treated as no result`);
      return undefined;
    }
    return hookResultCached(hook, r.result);
  } catch (e) {
    log(3, `${hook} failed in the bridge: ${e.stack ?? e}`);
    return undefined;
  }
}

function isOneShot() {
  if (g.gatewayStarted) return false;
  if (g.oneShotSeen) return true;
  const argv = process.argv.slice(2);
  return argv.includes('agent') && argv.includes('--local');
}

// ---- Slack: a message's text with its mentions ----------------------------------------
//
// OpenClaw 2026.9.6 hands message_received a Slack message's command text
// (BodyForCommands, which @openclaw/slack makes with
// stripSlackMentionsForCommandDetection: every <@...> cut out), so whom the
// message mentions is not in it; only a message of nothing but mentions
// falls back to the raw text. before_dispatch, which OpenClaw runs for the
// same account after message_received and before that account's run,
// carries the text agents read (bodyForAgent: the raw text, mentions
// rendered "<@U...> (name)"). The bridge keeps that text per message, and a
// Slack message_received waits for it (at most SLACK_TEXT_WAIT_MS; the first
// account's before_dispatch serves the reports of every account), so the
// plugin ingests the message with its mentions. Decisions of the channel
// wait for the ingest as always (trackIngest); an account's before_dispatch
// comes before its own run, so the wait never waits for a run.
const SLACK_TEXT_WAIT_MS = 3000;
const SLACK_TEXTS_KEPT = 512;
const slackTexts = new Map(); // slackTextKey -> the text before_dispatch saw
const slackTextWaiters = new Map(); // slackTextKey -> Set of resolve functions

function slackTextKey(ev = {}, octx = {}) {
  const messageId = ev.messageId ?? octx.messageId ?? (ev.metadata && ev.metadata.messageId);
  if (typeof messageId !== 'string' || !messageId) return null;
  const p = parseSessionKey(ev.sessionKey ?? octx.sessionKey);
  const channelId = p && !p.isDm ? p.channelId : channelFrom(octx.conversationId);
  return `${channelId ?? ''}\u0000${messageId}`;
}

// The bridge's own before_dispatch (never claims the message).
function bridgeBeforeDispatch(oev = {}, octx = {}) {
  try {
    noteSlackShape('before_dispatch', oev, octx);
    if (providerOf(oev, octx) !== 'slack' || typeof oev.body !== 'string') return undefined;
    const key = slackTextKey(oev, octx);
    if (!key) return undefined;
    slackTexts.set(key, oev.body);
    if (slackTexts.size > SLACK_TEXTS_KEPT) slackTexts.delete(slackTexts.keys().next().value);
    const waiting = slackTextWaiters.get(key);
    if (waiting) {
      slackTextWaiters.delete(key);
      for (const resolve of waiting) resolve(oev.body);
    }
  } catch (e) {
    log(3, `before_dispatch (bridge) failed: ${e.stack ?? e}`);
  }
  return undefined;
}

// The text of a Slack message_received: undefined when the event's own
// content is whole (it holds a mention: OpenClaw fell back to the raw text)
// or when no before_dispatch brought it in time. {text, from} for the log.
async function slackTextFor(oev = {}, octx = {}) {
  if (typeof oev.content === 'string' && oev.content.includes('<@')) return { from: 'event (whole)' };
  const key = slackTextKey(oev, octx);
  if (!key) return { from: 'event (no message id)' };
  if (slackTexts.has(key)) return { text: slackTexts.get(key), from: 'before_dispatch' };
  const text = await new Promise((resolve) => {
    let set = slackTextWaiters.get(key);
    if (!set) slackTextWaiters.set(key, (set = new Set()));
    const done = (v) => {
      clearTimeout(timer);
      set.delete(done);
      if (set.size === 0 && slackTextWaiters.get(key) === set) slackTextWaiters.delete(key);
      resolve(v);
    };
    const timer = setTimeout(() => done(undefined), SLACK_TEXT_WAIT_MS);
    set.add(done);
  });
  return text === undefined
    ? { from: `event without its mentions (no before_dispatch within ${SLACK_TEXT_WAIT_MS} ms)` }
    : { text, from: 'before_dispatch' };
}

// An observe hook: the plugin's handlers in priority order, then the
// bridge's lifecycle work.
async function dispatchObserve(hook, oev, octx) {
  try {
    if (hook === 'gateway_start') g.gatewayStarted = true;
    const ctx = hookCtx(hook, oev, octx);
    if (hook === 'message_received' || hook === 'agent_end') noteSlackShape(hook, oev, octx);
    if (hook !== 'message_received') seeSession(ctx);
    const hasHandlers = g.surface && g.surface.hooks.some((h) => h.hook === hook);
    let ev;
    if (hook === 'message_received' && hasHandlers && providerOf(oev, octx) === 'slack') {
      const got = await slackTextFor(oev, octx);
      ev = messageReceivedEvent(oev, octx, got.text);
      log(0, `message_received slack ${ev.channelId ?? '?'}${ev.threadId ? ` thread ${ev.threadId}` : ''} ` +
        `message ${ev.messageId ?? '?'} from ${ev.senderId ?? '?'}${ev.senderIsBot ? ' (bot)' : ''} for ` +
        `${ctx.sessionKey ?? '?'}: mentions [${ev.mentions.join(', ')}], text from ${got.from}`);
    } else {
      ev = hookEvent(hook, oev, octx);
    }
    let forward = true;
    if (hook === 'agent_end') {
      // OpenClaw retries an attempt without a visible answer inside one run
      // and fires agent_end per attempt (same runId); the ABI has one per run.
      const runKey = `${ctx.sessionKey}\u0000${ev.runId}`;
      if (ev.runId && g.endedRuns.has(runKey)) {
        forward = false;
        log(0, `agent_end again for run ${ev.runId} (OpenClaw retry); not forwarded`);
      } else if (ev.runId) {
        g.endedRuns.add(runKey);
        if (g.endedRuns.size > ENDED_RUNS_KEPT) g.endedRuns.delete(g.endedRuns.values().next().value);
      }
    }
    if (forward && hasHandlers && foreignProvider(oev, octx)) forward = false;
    if (forward && hasHandlers && !(hook === 'gateway_stop' && !g.instance)) {
      await withInstance(async (inst) => {
        for (const reg of inst.hooks.filter((h) => h.hook === hook)) await runHook(inst, reg, ev, ctx);
      });
    }
  } catch (e) {
    log(3, `${hook} failed in the bridge: ${e.stack ?? e}`);
  }
  try {
    if (hook === 'gateway_stop') {
      g.stopped = true;
      await shutdownInstance('gateway_stop');
    } else if (hook === 'agent_end' && isOneShot() && g.instance) {
      // One process per turn: give the outbox its moment, then stop the
      // plugin cleanly before OpenClaw calls process.exit (which would
      // leave the plugin's threads running into exit). A later hook of the
      // same process starts it again.
      const settle = g.bridgeOpts.settleMs ?? DEFAULT_SETTLE_MS;
      if (settle > 0) await sleep(settle);
      await shutdownInstance('one-shot CLI run ended');
    }
  } catch (e) {
    log(3, `shutdown after ${hook} failed: ${e.stack ?? e}`);
  }
  return undefined;
}

// The bridge's own before_model_resolve: records the session and returns
// its persistent override (session_patch) on every run.
function bridgeModelResolve(oev, octx) {
  try {
    const ctx = agentCtxEntry(octx).ctx;
    seeSession(ctx);
    return ctx.sessionKey ? g.sessions.override(ctx.sessionKey) : undefined;
  } catch (e) {
    log(3, `before_model_resolve (bridge) failed: ${e.stack ?? e}`);
    return undefined;
  }
}

function makeTool(name, octx) {
  if (octx && octx.oneShotCliRun === true) g.oneShotSeen = true;
  const def = g.surface.tools.get(name);
  const ctx = toolCtx(octx);
  return {
    name,
    label: name,
    description: def.description,
    parameters: def.parameters,
    async execute(toolCallId, params) {
      seeSession(ctx);
      // The call's id reaches the plugin as ctx.toolCallId (plugin.h): a
      // tool with effects answers a repeated id with its first result.
      const callCtx = typeof toolCallId === 'string' && toolCallId ? { ...ctx, toolCallId } : ctx;
      const { status, result } = await withInstance(async (inst) => {
        const t = inst.tools.get(name);
        if (!t) return { status: OC.NOT_FOUND, result: { error: { code: 'OC_ERR_NOT_FOUND', message: `tool ${name} is gone after a plugin restart` } } };
        return callHandler(inst, t.execute, params ?? {}, callCtx);
      });
      if (status === OC.OK) {
        if (!result || !Array.isArray(result.content)) {
          log(2, `tool ${name} returned OC_OK without content; the ABI requires {content, details}`);
          return { content: [{ type: 'text', text: JSON.stringify(result ?? null) }], details: result ?? {} };
        }
        return { content: result.content, details: result.details ?? {} };
      }
      const err = result && result.error;
      throw new Error(`${err && err.code ? err.code : statusName(status)}: ${err && err.message ? err.message : `${name} failed without a message`}`);
    },
  };
}

// ---- registration ---------------------------------------------------------------------

function splitConfig(cfg) {
  const { bridge, ...nativeConfig } = cfg && typeof cfg === 'object' ? cfg : {};
  return { nativeConfig, bridgeOpts: bridge && typeof bridge === 'object' ? bridge : {} };
}

function registerWithOpenClaw(api) {
  for (const name of g.surface.tools.keys()) {
    api.registerTool((octx) => makeTool(name, octx), { name });
  }
  api.on('before_model_resolve', bridgeModelResolve, { priority: BRIDGE_PRIORITY });
  // Slack messages' mentions (see slackTextFor): only when the plugin reads messages.
  if (g.surface.hooks.some((h) => h.hook === 'message_received'))
    api.on('before_dispatch', bridgeBeforeDispatch, { priority: BRIDGE_PRIORITY });
  for (const [i, h] of g.surface.hooks.entries()) {
    if (MODIFY_HOOKS.has(h.hook))
      api.on(h.hook, SYNC_HOOKS.has(h.hook)
        ? (ev, ctx) => dispatchModifyFast(i, h.hook, ev, ctx)
        : (ev, ctx) => dispatchModify(i, h.hook, ev, ctx), { priority: h.priority });
  }
  for (const hook of OBSERVE_HOOKS) {
    const regs = g.surface.hooks.filter((h) => h.hook === hook);
    const needed = regs.length > 0 || hook === 'agent_end' || hook === 'gateway_start' || hook === 'gateway_stop';
    if (!needed) continue;
    const priority = regs.length ? Math.max(...regs.map((h) => h.priority)) : 0;
    api.on(hook, hook === 'message_received'
      ? (ev, ctx) => trackIngest(hookCtx(hook, ev, ctx).channelId, dispatchObserve(hook, ev, ctx))
      : (ev, ctx) => dispatchObserve(hook, ev, ctx), { priority });
  }
}

// ---- the operator's commands: openclaw dirigent ... -----------------------------------
//
// `openclaw dirigent doctor` checks the config OpenClaw resolved (the same
// checks as `dirigent-ctl doctor`); `status`, `scopes`, `why`,
// `discussions`, `show` and `outbox` read the store of the running
// gateway, read-only. All of them run the packaged dirigent-ctl with
// OpenClaw's config on its stdin (--openclaw-config -), so the store and
// every check are found exactly as the plugin finds them, and print what it
// prints; its exit status becomes the command's. No native instance is
// started for them (register() sees the command line).

const CLI_COMMAND = 'dirigent';
const CLI_DESCRIPTION = 'Dirigent: check the config before the first start (doctor), read the running gateway\'s turn store (status, scopes, why, discussions, show, outbox)';
const BRIDGE_DIR = path.dirname(fileURLToPath(import.meta.url));
// The first OpenClaw release with the claim hooks (before_agent_reply).
const CLAIM_HOOKS_SINCE = [2026, 9];

// `openclaw dirigent ...`: this process is a CLI run of our command.
function isDirigentCli() {
  const argv = process.argv.slice(2);
  return argv.includes(CLI_COMMAND) && !argv.includes('gateway') && !argv.includes('agent');
}

function findCtl(rootDir) {
  const candidates = [];
  if (process.env.DIRIGENT_CTL) candidates.push(path.resolve(resolveHome(process.env.DIRIGENT_CTL)));
  for (const d of new Set([rootDir, BRIDGE_DIR].filter(Boolean))) {
    candidates.push(path.join(d, 'dirigent-ctl'));
    candidates.push(path.join(d, '..', '..', 'build', 'dirigent-ctl'));
  }
  const found = candidates.find((c) => fs.existsSync(c));
  if (!found) {
    throw new Error(`cannot find dirigent-ctl (tried: ${candidates.join(', ')}); reinstall the ` +
      'package (it carries dirigent-ctl) or set env DIRIGENT_CTL to the program');
  }
  return found;
}

// OpenClaw's version: the runtime's, else its package.json beside openclaw.mjs.
function openclawVersion(api) {
  try {
    if (typeof api.runtime?.version === 'string') return api.runtime.version;
  } catch { /* no runtime in this registration mode */ }
  try {
    const dir = path.dirname(fs.realpathSync(process.argv[1]));
    return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

function hasClaimHooks(version) {
  const m = /^v?(\d+)\.(\d+)/.exec(version ?? '');
  if (!m) return true; // unknown: OpenClaw 2026.9.6 is what the bridge is built for
  const [y, mo] = [Number(m[1]), Number(m[2])];
  return y > CLAIM_HOOKS_SINCE[0] || (y === CLAIM_HOOKS_SINCE[0] && mo >= CLAIM_HOOKS_SINCE[1]);
}

// dirigent-ctl with args, the host config as JSON on its stdin, its output
// on ours. Resolves to its exit status.
function runCtl(bin, args, hostConfig) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['pipe', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.stdin.on('error', () => { /* it exited before reading: its status says why */ });
    child.stdin.end(JSON.stringify(hostConfig ?? {}));
  });
}

function registerCliCommands(api) {
  if (typeof api.registerCli !== 'function') return;
  api.registerCli(({ program, config }) => {
    const hostConfig = config ?? api.config;
    const version = openclawVersion(api);
    const run = async (args) => {
      try {
        process.exitCode = await runCtl(findCtl(api.rootDir), args, hostConfig);
      } catch (e) {
        process.stderr.write(`openclaw ${CLI_COMMAND}: ${e.message ?? e}\n`);
        process.exitCode = 1;
      }
    };
    const store = (json, ...rest) => ['--openclaw-config', '-', ...(json ? ['--json'] : []), ...rest];
    const cmd = program.command(CLI_COMMAND).description(CLI_DESCRIPTION);
    cmd.command('doctor')
      .description('Check this config before the first start: the plugin config, placeholders left in, the Discord and Slack tokens (whose is each), who sees and may post in each channel (Slack: who is a member), the moderator\'s permissions and Slack scopes, hooks.allowConversationAccess, the database path, the no-reply provider')
      .option('--json', 'one JSON object {ok, errors, warnings, findings}')
      .action((o) => run(['doctor', '--openclaw-config', '-', ...(version ? ['--openclaw-version', version] : []),
        ...(o.json ? ['--json'] : [])]));
    cmd.command('status').description('The store in a few lines: scopes by state, active discussions, the outbox')
      .option('--json', 'JSON output').action((o) => run(store(o.json, 'status')));
    cmd.command('scopes').description('Every managed scope: turn order, speaker or dormant/resting, passed agents')
      .option('--json', 'JSON output').action((o) => run(store(o.json, 'scopes')));
    cmd.command('why').argument('<channel>', 'channel id (a snowflake)').argument('[agent]', 'agent id')
      .description('The channel\'s last turn transitions and their causes; with AGENT, what that agent gets now')
      .option('--json', 'JSON output')
      .action((channel, agent, o) => run(store(o.json, ...(hasClaimHooks(version) ? [] : ['--no-claim-hooks']),
        'why', channel, ...(agent ? [agent] : []))));
    cmd.command('discussions').description('Active discussions, newest first')
      .option('--all', 'closed ones too').option('--json', 'JSON output')
      .action((o) => run(store(o.json, 'discussions', ...(o.all ? ['--all'] : []))));
    cmd.command('show').argument('<id>', 'discussion id or channel id').description('One discussion')
      .option('--json', 'JSON output').action((id, o) => run(store(o.json, 'show', id)));
    cmd.command('outbox').description('Pending and failed moderator messages')
      .option('--json', 'JSON output').action((o) => run(store(o.json, 'outbox')));
  }, { descriptors: [{ name: CLI_COMMAND, description: CLI_DESCRIPTION, hasSubcommands: true }] });
}

// Registration modes whose registry may run tools and hooks. OpenClaw
// 2026.9.6 dispatches the typed hooks of an `openclaw agent --local` run
// from a registry it loaded in "discovery" mode (checked: hooks registered
// only in "full" mode never fire there), so every mode with a live runtime
// gets the same tools and hooks; all of them share one native instance.
const LIVE_MODES = new Set(['full', 'discovery', 'tool-discovery', 'setup-runtime']);

function register(api) {
  const mode = api.registrationMode ?? 'full';
  try {
    registerCliCommands(api);
  } catch (e) {
    log(2, `registering the openclaw ${CLI_COMMAND} commands failed: ${e.stack ?? e}`);
  }
  // setup-only and cli-metadata loads have no runtime: nothing to start; a
  // run of `openclaw dirigent ...` only reads (dirigent-ctl).
  if (!LIVE_MODES.has(mode) || isDirigentCli()) return;
  g.logger = api.logger ?? g.logger;
  // A full registration's runtime wins: it is the gateway's own.
  if (mode === 'full' || !g.decisions) g.decisions = decisionRuntime(api) ?? g.decisions;
  const { nativeConfig, bridgeOpts } = splitConfig(api.pluginConfig);
  const key = JSON.stringify(nativeConfig);
  if (!g.native) {
    g.bridgeOpts = bridgeOpts;
    g.native = loadNative(bridgeOpts, api.rootDir);
    g.sessions = new SessionStore(path.resolve(resolveHome(bridgeOpts.stateFile ?? defaultStateFile(nativeConfig))));
  } else if (bridgeOpts.soPath && path.resolve(api.rootDir ?? process.cwd(), resolveHome(bridgeOpts.soPath)) !== g.native.soPath) {
    log(2, `bridge.soPath changed to ${bridgeOpts.soPath}; ${g.native.soPath} stays loaded until OpenClaw restarts`);
  }
  if (!g.instance && !g.transition) {
    g.nativeConfig = nativeConfig;
    g.configKey = key;
    g.stopped = false;
    g.instance = initInstance(nativeConfig);
  } else if (key !== g.configKey) {
    // OpenClaw re-registered with another config (hot reload): swap the
    // instance once the calls in flight are done.
    g.nativeConfig = nativeConfig;
    g.configKey = key;
    g.bridgeOpts = bridgeOpts;
    shutdownInstance('configuration changed').catch((e) => log(3, `swap failed: ${e.stack ?? e}`));
  }
  registerWithOpenClaw(api);
  warnUnmanagedAgents(api.config, nativeConfig);
}

// An OpenClaw agent that answers on Discord or Slack but is missing from
// the plugin's `agents` (or has no user id of that platform there) is not
// managed there: in a shared channel it runs its real model on every
// message. Said once per registration and platform, naming the agents.
const PLATFORM_IDS = { discord: ['Discord', 'discordUserId'], slack: ['Slack', 'slackUserId'] };
function warnUnmanagedAgents(hostConfig, nativeConfig) {
  try {
    const agents = nativeConfig?.agents ?? {};
    for (const [platform, [name, idKey]] of Object.entries(PLATFORM_IDS)) {
      const bound = new Set();
      for (const b of Array.isArray(hostConfig?.bindings) ? hostConfig.bindings : []) {
        if (b && typeof b.agentId === 'string' && b.match && b.match.channel === platform) bound.add(b.agentId);
      }
      const missing = [...bound].filter((id) => !agents[id] || typeof agents[id][idKey] !== 'string').sort();
      if (!missing.length) continue;
      const many = missing.length > 1;
      log(2, `OpenClaw agent${many ? 's' : ''} ${missing.join(', ')} answer${many ? '' : 's'} on ${name} ` +
        `(bindings) but ${many ? 'are' : 'is'} not in plugins.entries.dirigent.config.agents with a ${idKey}: not managed there, ` +
        `${many ? 'they run their' : 'it runs its'} real model on every message of a shared channel; ` +
        `add each with its ${idKey}`);
    }
  } catch (e) {
    log(3, `checking OpenClaw's agents against the plugin's failed: ${e.stack ?? e}`);
  }
}

export default {
  id: PLUGIN_ID,
  name: 'Dirigent',
  description: 'Runs the native Dirigent plugin (dirigent.so, plugin ABI v1) inside OpenClaw',
  register,
};

// For the bridge's own tests (test/unit.mjs): the translation functions.
export const _internals = { decideRequestError, decisionRuntime, foreignProvider, bridgeBeforeDispatch, slackTextFor, providerOf, explainLoadError, shutdownInstance, SessionStore, isHostNotice, parseSessionKey, channelFrom, agentCtx, toolCtx, agentEndEvent, messageReceivedEvent, hookResult, g };
