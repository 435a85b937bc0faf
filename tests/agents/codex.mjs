// Driving the real Codex CLI (0.171.0, pinned in package-lock.json) headless against the local
// mock model server of lib.mjs: a throwaway HOME and CODEX_HOME whose config.toml names a mock
// provider speaking the OpenAI Responses API with streaming, cairn's hooks trusted exactly as
// Codex's own `/hooks` trusts them, and `codex exec` run in a project folder.
//
// What Codex 0.171 does, checked against its binary and source (openai/codex, codex-rs):
//
// - Trust. A hook from a user or project layer runs only when config.toml holds
//   `[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash = "sha256:…"`
//   equal to the hook's current hash (hooks/src/engine/discovery.rs, `hook_trust_status`; the
//   hash covers event, matcher and the normalized handler: command, timeout, async,
//   statusMessage, additionalContextLimit, not the file's path). The TUI's `/hooks` reads
//   `key` and `currentHash` from the app server's `hooks/list` and writes them with
//   `config/batchWrite` (`keyPath: "hooks.state"`, `{key: {trusted_hash}}`, `upsert`)
//   (tui/src/hooks_rpc.rs). `trustHooks` below does the same through `codex app-server`, so
//   the hash is Codex's own, never one computed here.
// - Hook timeouts (hooks/src/engine/discovery.rs with hooks/src/events/session_end.rs):
//   `timeout` is seconds; unset is 600 s and anything below 1 is 1 s, for every event but
//   SessionEnd (and Interrupt), whose default is 1 s and whose maximum is 3 s: a larger value
//   is clamped with "warning: clamping SessionEnd hook timeout to 3s in <hooks.json>" on
//   stderr at every run (SESSION_END_DEFAULT_TIMEOUT_SEC = 1, SESSION_END_MAX_TIMEOUT_SEC = 3).
// - additionalContext cut. Each hook's model-visible additionalContext is kept whole while
//   approx_token_count(text) <= its limit: `additionalContextLimit` on the handler in
//   hooks.json, unset = DEFAULT_HOOK_OUTPUT_TOKEN_LIMIT = 2_500 (hooks/src/output_spill.rs:12;
//   the app server's schema for HookMetadata.additionalContextLimit: "`null` uses 2,500
//   tokens; `0` disables spilling"). Over it, the full text goes to
//   `<temp dir>/hook_outputs/<thread id>/<uuid>.txt` and the model gets a head-and-tail
//   preview from formatted_truncate_text (the middle replaced by "…N tokens truncated…",
//   headed "Warning: truncated output (original token count: N)") plus "Full hook output saved
//   to: PATH". approx_token_count (utils/output-truncation, truncate.rs) is UTF-8 bytes / 4
//   rounded up (APPROX_BYTES_PER_TOKEN = 4); newer sources take the larger of that and a
//   lexical count, 0.171 does not. Measured with this binary (a SessionStart hook printing
//   additionalContext of N bytes): 10,000 bytes of "abcd " arrive whole, 10,004 arrive cut
//   ("original token count: 2501"); 4,000 bytes of "x." (4,000 lexical tokens) arrive whole;
//   cairn's 12,097-byte briefing of test b is cut ("original token count: 3025"); with
//   `"additionalContextLimit": 0` on the handler 20,000 bytes arrive whole. So Codex's budget
//   for a briefing is 10,000 bytes of additionalContext, unless the handler sets its own.
// - transcript_path arrives set (the rollout file under $CODEX_HOME/sessions/…) for
//   SessionStart and SessionEnd of `codex exec`; with `--ephemeral` there is no rollout.

import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { run, cairn, startMock, sse, tempDir, bin, cairnBin as defaultCairnBin } from './lib.mjs';

// The shared `run` (a child that never reads its stdin is no error) and `cairn`.
export { run, cairn };

/** The Codex CLI under test. */
export const codexBin = path.join(bin, 'codex');

/** The env var holding the mock provider's key (any value: the mock ignores it). */
const KEY_ENV = 'CAIRN_TEST_MOCK_KEY';

/**
 * A throwaway world for one Codex run: `home` (HOME), `codexHome` (CODEX_HOME, the usual
 * ~/.codex), `project` (a git work tree Codex runs in) and `kb` (a cairn knowledge repository
 * made by `cairn init`). `cleanup()` removes it all.
 */
export async function world({ cairnBin = defaultCairnBin, kb = true } = {}) {
  const t = tempDir('cairn-codex-');
  const home = path.join(t.dir, 'home');
  const codexHome = path.join(home, '.codex');
  const project = path.join(t.dir, 'project');
  fs.mkdirSync(codexHome, { recursive: true });
  fs.mkdirSync(project, { recursive: true });
  const gitEnv = gitEnvFor(home);
  await run('git', ['init', '-q', project], { env: gitEnv });
  const w = {
    dir: t.dir, home, codexHome, project, cairnBin,
    kb: kb ? path.join(t.dir, 'kb') : null,
    env: { HOME: home, CODEX_HOME: codexHome, [KEY_ENV]: 'mock', ...gitEnv },
    cleanup: t.cleanup,
  };
  if (kb) await cairn(['init', w.kb], { env: w.env, cwd: t.dir }, 0, cairnBin);
  return w;
}

function gitEnvFor(home) {
  return {
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: path.join(home, '.gitconfig'),
    GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 'test@example.com',
    GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 'test@example.com',
  };
}

/**
 * Writes CODEX_HOME/config.toml: the mock provider at `url` as the model provider (Responses
 * API, no retries), plus `extra` TOML appended as is (e.g. `[mcp_servers.cairn]`).
 */
export function writeConfig(w, url, extra = '') {
  const toml = [
    'model = "mock-model"',
    'model_provider = "mock"',
    'approval_policy = "never"',
    '',
    '[model_providers.mock]',
    'name = "mock"',
    `base_url = "${url}/v1"`,
    'wire_api = "responses"',
    `env_key = "${KEY_ENV}"`,
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    extra,
  ].join('\n');
  fs.writeFileSync(path.join(w.codexHome, 'config.toml'), toml);
}

/** One assistant message as a Responses API output item. */
export function message(text) {
  return { type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
}

/** One function call as a Responses API output item. */
export function functionCall(name, args, callId = 'call_1', namespace) {
  const item = { type: 'function_call', name, arguments: JSON.stringify(args), call_id: callId };
  if (namespace) item.namespace = namespace;
  return item;
}

let seq = 0;
/**
 * Answers one Responses API request with `items`, streamed the way the Responses API streams:
 * response.created, for each item output_item.added and output_item.done (a message also as
 * one output_text.delta), then response.completed with its usage.
 */
export function respond(res, items, usage = { input: 100, output: 10 }) {
  const id = `resp_${++seq}`;
  const events = [{ event: 'response.created', data: { type: 'response.created', response: { id, status: 'in_progress', output: [] } } }];
  items.forEach((raw, i) => {
    const item = { id: `item_${seq}_${i}`, status: 'completed', ...raw };
    events.push({ event: 'response.output_item.added', data: { type: 'response.output_item.added', output_index: i, item: { ...item, status: 'in_progress' } } });
    if (item.type === 'message') {
      events.push({ event: 'response.output_text.delta', data: { type: 'response.output_text.delta', item_id: item.id, output_index: i, content_index: 0, delta: item.content[0].text } });
    }
    events.push({ event: 'response.output_item.done', data: { type: 'response.output_item.done', output_index: i, item } });
  });
  events.push({
    event: 'response.completed',
    data: {
      type: 'response.completed',
      response: {
        id, status: 'completed',
        usage: {
          input_tokens: usage.input, input_tokens_details: { cached_tokens: 0 },
          output_tokens: usage.output, output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: usage.input + usage.output,
        },
      },
    },
  });
  sse(res, events);
}

/**
 * A mock model server. `script(body, n)` returns the output items for the n-th model request
 * (from 1); the default answers every request with one short message. Anything else Codex
 * asks (GET /v1/models and the like) gets a 404.
 */
export async function mockModel(script = () => [message('ok')]) {
  let n = 0;
  const mock = await startMock((req, res, body, entry) => {
    entry.epoch = Date.now();
    if (req.method === 'POST' && req.url.endsWith('/responses')) {
      n += 1;
      respond(res, script(body, n), body && body.__usage);
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"not here"}}');
  });
  mock.modelRequests = () => mock.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/responses'));
  return mock;
}

/** Runs `codex exec PROMPT` in the project with the world's environment. */
export function codexExec(w, prompt, { args = [], timeoutMs = 90_000, env = {}, cwd } = {}) {
  return run(codexBin, ['exec', '--skip-git-repo-check', ...args, prompt], {
    env: { ...w.env, ...env }, cwd: cwd ?? w.project, timeoutMs,
  });
}

/**
 * Trusts every hook Codex lists for the project that is not trusted yet, exactly as `/hooks`
 * does: `hooks/list` through `codex app-server` for the key and current hash, then
 * `config/batchWrite` of `hooks.state.<key>.trusted_hash`. Returns the hooks as listed before.
 */
export async function trustHooks(w, cwd = w.project) {
  const rpc = await appServer(w);
  try {
    await rpc.request('initialize', { clientInfo: { name: 'cairn-tests', version: '0' } });
    rpc.notify('initialized');
    const listed = await rpc.request('hooks/list', { cwds: [cwd] });
    const hooks = listed.data.flatMap((entry) => entry.hooks);
    const value = {};
    for (const h of hooks) {
      if (h.trustStatus === 'untrusted' || h.trustStatus === 'modified') value[h.key] = { trusted_hash: h.currentHash };
    }
    if (Object.keys(value).length) {
      await rpc.request('config/batchWrite', {
        edits: [{ keyPath: 'hooks.state', value, mergeStrategy: 'upsert' }],
        reloadUserConfig: true,
      });
    }
    const after = await rpc.request('hooks/list', { cwds: [cwd] });
    return { before: hooks, after: after.data.flatMap((entry) => entry.hooks), warnings: after.data.flatMap((e) => e.warnings) };
  } finally {
    rpc.close();
  }
}

/** `codex app-server` over stdio: newline-delimited JSON-RPC. */
async function appServer(w) {
  const child = spawn(codexBin, ['app-server'], {
    cwd: w.project, env: { PATH: process.env.PATH, ...w.env }, stdio: ['pipe', 'pipe', 'pipe'],
  });
  let buf = '';
  let stderr = '';
  let next = 1;
  const waiting = new Map();
  child.stderr.on('data', (d) => { stderr += d; });
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      const msg = JSON.parse(line);
      if (msg.id !== undefined && waiting.has(msg.id)) {
        const { ok, fail } = waiting.get(msg.id);
        waiting.delete(msg.id);
        if (msg.error) fail(new Error(`${JSON.stringify(msg.error)}\n${stderr}`)); else ok(msg.result);
      }
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return {
    request(method, params) {
      const id = next++;
      child.stdin.write(`${JSON.stringify({ id, method, params })}\n`);
      return new Promise((ok, fail) => waiting.set(id, { ok, fail }));
    },
    notify(method, params) {
      child.stdin.write(`${JSON.stringify(params === undefined ? { method } : { method, params })}\n`);
    },
    close() { clearTimeout(timer); child.stdin.end(); child.kill('SIGTERM'); },
  };
}

/**
 * Milliseconds from starting `codex exec` to the first request at the mock model server, with
 * cairn's hooks installed (and trusted) for the knowledge repository `repo` or not. The
 * SessionStart hook runs before the first request, so the difference is what the briefing
 * costs a person at every session start. `repo` must be a cairn knowledge repository.
 */
export async function timeToFirstRequest({ repo, hooks, cairnBin = defaultCairnBin }) {
  const w = await world({ cairnBin, kb: false });
  // The installed hooks call `cairn` from PATH.
  w.env.PATH = `${path.dirname(cairnBin)}:${process.env.PATH}`;
  const mock = await mockModel();
  try {
    writeConfig(w, mock.url);
    if (hooks) {
      const r = await run(cairnBin, ['--repo', repo, 'hooks', 'install', '--agent', 'codex', '--global'], { env: w.env, cwd: w.project });
      if (r.code !== 0) throw new Error(`cairn hooks install failed\n${r.stderr}`);
    }
    // Also without hooks: Codex's first start in a fresh CODEX_HOME sets it up (skills,
    // databases), which the app server here does for both cases alike.
    await trustHooks(w);
    const started = Date.now();
    const r = await codexExec(w, 'hello', { timeoutMs: 120_000 });
    const req = mock.modelRequests()[0];
    if (!req) throw new Error(`codex made no model request (exit ${r.code})\n${r.stderr}`);
    if (hooks && !req.text.includes('cairn brief')) {
      throw new Error(`cairn's SessionStart hook did not brief the model\n${r.stderr}`);
    }
    return req.epoch - started;
  } finally {
    await mock.close();
    w.cleanup();
  }
}
