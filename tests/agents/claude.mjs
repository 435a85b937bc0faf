// Driving the real Claude Code (pinned in package.json) headless against a local mock of the
// Anthropic Messages API: a throwaway HOME (so ~/.claude and ~/.claude.json are the test's),
// `claude -p` pointed at the mock by ANTHROPIC_BASE_URL with a made-up ANTHROPIC_API_KEY,
// non-essential traffic (telemetry, updates, error reports) off, and the cairn under test
// first on PATH, since the hooks cairn installs call `cairn`. Nothing here touches the
// network.
//
// The mock answers what Claude Code 2.1.332 calls: POST /v1/messages, streaming (SSE:
// message_start, content_block_start, content_block_delta, content_block_stop,
// message_delta, message_stop) or not, and /v1/messages/count_tokens. What each answer says
// is the test's `reply(body, entry)`: `{text}` or `{toolUse: {name, input}}`.
//
// `timeToFirstRequest({repo, hooks, cairnBin})` is the benchmark's measure (tests/agents/
// bench.mjs): from spawning `claude -p` to its first request at the mock, in a fresh project
// with or without cairn's hooks installed.

import fs from 'node:fs';
import path from 'node:path';
import { spawn, execFileSync } from 'node:child_process';
import { run, cairn, startMock, sse, tempDir, bin, cairnBin as defaultCairn } from './lib.mjs';

// The shared `run` (a child that never reads its stdin is no error) and `cairn`.
export { run, cairn };

export const claudeBin = path.join(bin, 'claude');

/** Every string inside a JSON value, in order: what a request gives the model to read. */
export function strings(v, out = []) {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) strings(x, out);
  return out;
}

/** The Messages API requests (not count_tokens) the mock received. */
export function messageRequests(requests) {
  return requests.filter((r) => r.method === 'POST' && /^\/v1\/messages(\?|$)/.test(r.path));
}

/**
 * Starts a mock Anthropic Messages server. `reply(body, entry)` returns what the assistant
 * says to one /v1/messages request: `{text}` (default "Done.") or `{toolUse: {name, input,
 * id?}}`.
 */
export async function anthropicMock(reply = () => ({ text: 'Done.' })) {
  let n = 0;
  return startMock(async (req, res, body, entry) => {
    if (req.url.startsWith('/v1/messages/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ input_tokens: Math.ceil((entry.text || '').length / 4) }));
    }
    if (req.method !== 'POST' || !req.url.startsWith('/v1/messages')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: req.url } }));
    }
    n += 1;
    const said = (await reply(body, entry)) || { text: 'Done.' };
    const id = `msg_mock_${n}`;
    const model = body?.model || 'claude-mock';
    const usage = { input_tokens: 100, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    const block = said.toolUse
      ? { type: 'tool_use', id: said.toolUse.id || `toolu_mock_${n}`, name: said.toolUse.name, input: said.toolUse.input }
      : { type: 'text', text: said.text };
    const stop = said.toolUse ? 'tool_use' : 'end_turn';
    if (!body?.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({
        id, type: 'message', role: 'assistant', model, content: [block],
        stop_reason: stop, stop_sequence: null, usage,
      }));
    }
    const start = said.toolUse ? { ...block, input: {} } : { type: 'text', text: '' };
    const delta = said.toolUse
      ? { type: 'input_json_delta', partial_json: JSON.stringify(said.toolUse.input) }
      : { type: 'text_delta', text: said.text };
    sse(res, [
      { event: 'message_start', data: { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: start } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 10 } } },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
  });
}

/**
 * The environment Claude Code runs in: HOME (its ~/.claude), the mock, a fake key, nothing
 * sent anywhere else, and `cairn` (the binary under test) first on PATH.
 */
export function claudeEnv(home, url, cairnBin = defaultCairn) {
  return {
    HOME: home,
    PATH: `${path.dirname(cairnBin)}:${process.env.PATH}`,
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: 'sk-ant-api03-mock-key-for-a-local-server',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    TMPDIR: process.env.TMPDIR || '/tmp',
  };
}

/** Runs `claude ARGS` headless; resolves run()'s `{code, stdout, stderr, ms}`. */
export function claude(args, { home, cwd, url, cairnBin, timeoutMs = 90_000, env = {} }) {
  return run(claudeBin, args, { cwd, env: { ...claudeEnv(home, url, cairnBin), ...env }, timeoutMs });
}

/** A git repository with a README and one commit: the code project an agent works in. */
export async function makeProject(dir) {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'README.md'), '# Billing API\n\nInvoices and payments, with a redis cache in front of postgres.\n');
  // execFileSync, not lib's run(): a git that has exited before run() writes its empty stdin
  // fails that write with EPIPE.
  for (const args of [['init', '-q'], ['add', '-A'], ['commit', '-q', '-m', 'start']]) {
    execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', ...args], { cwd: dir, env: { PATH: process.env.PATH, HOME: dir }, stdio: 'pipe' });
  }
  return fs.realpathSync(dir);
}

/** `cairn init DIR` with the binary under test; returns the repository's real path. */
export async function makeKnowledgeRepo(dir, cairnBin = defaultCairn, env = {}) {
  const r = await run(cairnBin, ['init', dir], { env: { HOME: path.dirname(dir), ...env } });
  if (r.code !== 0) throw new Error(`cairn init ${dir}: ${r.stdout}${r.stderr}`);
  return fs.realpathSync(dir);
}

/** The JSON lines of every session file of Claude Code in the knowledge repository. */
export function sessionRecords(kb) {
  const dir = path.join(kb, 'vault/sessions/claude');
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl')).flatMap((f) =>
    fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)));
}

/** Polls `check()` until it returns something truthy, or throws after `timeoutMs`. */
export async function waitFor(what, check, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await check();
    if (got) return got;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs / 1000} s for ${what}`);
    await new Promise((ok) => setTimeout(ok, 250));
  }
}

/**
 * Milliseconds from spawning `claude -p` to its first Messages request at the mock, in a fresh
 * project (a git repository) and a fresh HOME; with `hooks`, cairn's Claude Code hooks are
 * installed in the project for `repo` first. Claude Code is killed as soon as the request
 * arrives: what comes after (the answer, SessionEnd's background ingest) is not the start's
 * cost, and an ingest left running would load the next run.
 */
export async function timeToFirstRequest({ repo, hooks, cairnBin = defaultCairn, timeoutMs = 120_000 }) {
  const t = tempDir('cairn-bench-claude-');
  let child;
  let mock;
  try {
    const home = path.join(t.dir, 'home');
    fs.mkdirSync(home);
    const project = await makeProject(path.join(t.dir, 'billing-api'));
    if (hooks) {
      const r = await run(cairnBin, ['--repo', repo, 'hooks', 'install', '--agent', 'claude-code'], { cwd: project, env: { HOME: home } });
      if (r.code !== 0) throw new Error(`hooks install: ${r.stdout}${r.stderr}`);
    }
    let first;
    const arrived = new Promise((ok) => { first = ok; });
    mock = await anthropicMock((body, entry) => { first(entry); return { text: 'Done.' }; });
    const started = process.hrtime.bigint();
    child = spawn(claudeBin, ['-p', 'What is this project about?'], {
      cwd: project,
      env: claudeEnv(home, mock.url, cairnBin),
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
    });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    const ended = new Promise((ok) => child.on('close', (code) => ok({ code })));
    let timer;
    const late = new Promise((ok) => { timer = setTimeout(() => ok({ timeout: true }), timeoutMs); });
    const got = await Promise.race([arrived.then(() => ({ ok: true })), ended, late]);
    clearTimeout(timer);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (!got.ok) throw new Error(`claude made no request (${got.timeout ? 'timed out' : `exit ${got.code}`}): ${stderr}`);
    if (hooks && !mock.requests.some((r) => strings(r.body).some((s) => s.includes('# Briefing')))) {
      throw new Error('with hooks, the first request holds no briefing');
    }
    return ms;
  } finally {
    if (child && child.exitCode === null) {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
      await new Promise((ok) => { if (child.exitCode !== null || child.signalCode) ok(); else child.on('close', ok); });
    }
    await mock?.close();
    t.cleanup();
  }
}

/** The knowledge repository's telemetry events (`.cairn/telemetry.jsonl`). */
export function telemetry(kb) {
  const file = path.join(kb, '.cairn/telemetry.jsonl');
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

function alive(pid) {
  try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; }
}

/**
 * Waits until every background ingest a hook started in `kb` (the pids its telemetry names as
 * `detached`) has ended: so that a test reads what they wrote, and removes its folders after
 * them.
 */
export async function settled(kb, timeoutMs = 60_000) {
  await waitFor('the background ingests to end', () => telemetry(kb)
    .filter((e) => e.component === 'hooks' && e.metadata?.detached)
    .every((e) => !alive(e.metadata.detached)), timeoutMs);
}
