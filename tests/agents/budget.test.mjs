// The session-start briefing against what the real Claude Code and Codex keep of it (ADRs 84,
// 85). A MEMORY.md of 97 entries and about 11,800 characters (the size issue 31 measured, the
// one tests/cli/agent_budget.rs makes): cairn's hooks, installed by cairn, give each agent a
// briefing fitted to its limit, which reaches the model whole (its last entry and the note of
// what was left out are in the request, and the agent cut nothing); the same briefing unfitted
// (`briefing_* = 0` in cairn.toml) is cut by the agent, which is what the fit is for.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startMock, sse, tempDir, run, bin, cairn, cairnBin, sentText } from './lib.mjs';

const SECTIONS = ['Preferences', 'Rules and conventions', 'System architecture', 'Operations',
  'Memory system', 'Projects', 'People and relationships'];
const WORDS = ['deploy', 'caddy', 'reload', 'certs', 'postgres', 'vacuum', 'redis', 'backup',
  'restic', 'nightly', 'journald', 'quota', 'billing', 'staging', 'canary', 'rollout',
  'migration', 'schema', 'tantivy', 'commit', 'clippy', 'rebase', '→', 'café'];

/** tests/cli/agent_budget.rs's memory_md(): 97 dated entries in the seven sections. */
function memoryMd() {
  let out = '# Memory\n\n<!-- Curated memory, injected into every agent session. One entry a line:\n'
    + '`- (YYYY-MM-DD) text`, under `## Section` headings named for the categories\n'
    + '(Preferences, Rules and conventions, System architecture, Operations, Memory system,\n'
    + 'Projects, People and relationships). Edit by hand freely; cairn keeps your bytes. -->\n\n';
  let n = 0;
  SECTIONS.forEach((section, i) => {
    out += `## ${section}\n\n`;
    for (let j = 0; j < (i < 6 ? 14 : 13); j++) {
      n++;
      const words = Array.from({ length: 13 }, (_, k) => WORDS[(n * 7 + k * 5) % WORDS.length]);
      const day = String((n % 28) + 1).padStart(2, '0');
      out += `- (2026-11-${day}) Entry ${String(n).padStart(2, '0')}: ${words.join(' ')}${n % 10 === 0 ? ' 🚀' : ''}\n`;
    }
    out += '\n';
  });
  return out;
}

/** A knowledge repository with that MEMORY.md and a slog entry, and a project beside it. */
async function setup(whole) {
  const t = tempDir('cairn-budget-');
  const home = path.join(t.dir, 'home');
  const kb = path.join(t.dir, 'kb');
  const project = path.join(t.dir, 'billing');
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(project);
  const env = { HOME: home, GIT_CONFIG_NOSYSTEM: '1', PATH: `${path.dirname(cairnBin)}:${process.env.PATH}` };
  await cairn(['init', kb], { env });
  fs.writeFileSync(path.join(kb, 'MEMORY.md'), memoryMd());
  if (whole) {
    const toml = path.join(kb, 'cairn.toml');
    fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8')
      .replace('briefing_chars = 9500', 'briefing_chars = 0')
      .replace('briefing_tokens = 2400', 'briefing_tokens = 0'));
  }
  await run('git', ['-C', kb, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', 'memory'], { env });
  await cairn(['--repo', kb, 'slog', 'deploy', 'billing', 'rolled out billing v2 to staging'], { env });
  await run('git', ['init', '-q', project], { env });
  return { t, home, kb, project, env };
}

/** What `cairn brief --agent AGENT` gives, and the last MEMORY.md entry in it. */
async function brief(s, agent) {
  const r = await cairn(['--repo', s.kb, 'brief', '--agent', agent, '--json'], { env: s.env, cwd: s.project });
  const data = JSON.parse(r.stdout).data;
  const last = data.markdown.split('\n').filter((l) => l.startsWith('- (')).at(-1);
  return { data, last };
}

/** The request log holds `text` as sent (raw, or JSON-escaped). */
function sent(requests, text) {
  const all = sentText(requests);
  return all.includes(text) || all.includes(JSON.stringify(text).slice(1, -1));
}

async function runCodex(s) {
  const codexHome = path.join(s.home, '.codex');
  fs.mkdirSync(codexHome, { recursive: true });
  let n = 0;
  const mock = await startMock((req, res) => {
    if (req.method !== 'POST') { res.writeHead(404); res.end(); return; }
    n++;
    sse(res, [
      { event: 'response.created', data: { type: 'response.created', response: { id: `r${n}` } } },
      { event: 'response.output_item.done', data: { type: 'response.output_item.done', item: { type: 'message', role: 'assistant', id: `m${n}`, content: [{ type: 'output_text', text: 'ok' }] } } },
      { event: 'response.completed', data: { type: 'response.completed', response: { id: `r${n}`, usage: { input_tokens: 10, input_tokens_details: null, output_tokens: 1, output_tokens_details: null, total_tokens: 11 } } } },
    ]);
  });
  fs.writeFileSync(path.join(codexHome, 'config.toml'), `model = "mock-model"
model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "${mock.url}/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`);
  const env = { ...s.env, CODEX_HOME: codexHome, MOCK_API_KEY: 'x' };
  await cairn(['--repo', s.kb, 'hooks', 'install', '--agent', 'codex', '--global'], { env, cwd: s.project });
  // The hooks trusted for this run, as a person trusts them with /hooks.
  const r = await run(path.join(bin, 'codex'), ['exec', '--skip-git-repo-check', '--dangerously-bypass-hook-trust', 'say hi'],
    { env, cwd: s.project, timeoutMs: 90_000 });
  await mock.close();
  assert.equal(r.code, 0, r.stderr);
  return mock.requests.filter((q) => q.method === 'POST');
}

async function runClaude(s) {
  const mock = await startMock((req, res, body) => {
    if (req.method !== 'POST' || !req.url.startsWith('/v1/messages')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{}');
      return;
    }
    if (req.url.includes('count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"input_tokens": 10}');
      return;
    }
    const message = { id: 'msg_1', type: 'message', role: 'assistant', model: body.model, content: [],
      stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } };
    sse(res, [
      { event: 'message_start', data: { type: 'message_start', message } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } } },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
  });
  const env = { ...s.env, ANTHROPIC_BASE_URL: mock.url, ANTHROPIC_API_KEY: 'sk-ant-test',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1' };
  await cairn(['--repo', s.kb, 'hooks', 'install', '--agent', 'claude-code', '--project', s.project], { env, cwd: s.project });
  const r = await run(path.join(bin, 'claude'), ['-p', 'say hi'], { env, cwd: s.project, timeoutMs: 90_000 });
  await mock.close();
  assert.equal(r.code, 0, r.stderr);
  return mock.requests.filter((q) => q.method === 'POST' && !q.path.includes('count_tokens'));
}

/** Leaves the folder once the background session-end ingest is done with it. */
async function cleanup(s) {
  await new Promise((ok) => setTimeout(ok, 1500));
  try { s.t.cleanup(); } catch { /* a background ingest still writing: the OS temp dir */ }
}

const cut = /tokens truncated|Full hook output saved|persisted-output|Output too large/;

for (const [agent, runAgent, limit] of [['codex', runCodex, 2400], ['claude-code', runClaude, 9500]]) {
  test(`${agent}: the fitted briefing reaches the model whole, with the note of what was left out`, async () => {
    const s = await setup(false);
    try {
      const { data, last } = await brief(s, agent);
      assert.equal(data.fit.limit, limit);
      assert.ok(data.fit.entries_left_out > 0 && data.fit.entries > 60, JSON.stringify(data.fit));
      const requests = await runAgent(s);
      assert.ok(sent(requests, last), `the last entry given (${last}) did not reach the model`);
      assert.ok(sent(requests, `**Left out** to fit ${agent}'s limit`), 'no note of what was left out');
      assert.ok(!cut.test(sentText(requests)), 'the agent cut the briefing');
    } finally {
      await cleanup(s);
    }
  });

  test(`${agent}: the same briefing unfitted is cut by the agent`, async () => {
    const s = await setup(true);
    try {
      const { data } = await brief(s, agent);
      assert.equal(data.fit, null);
      const requests = await runAgent(s);
      assert.ok(cut.test(sentText(requests)), 'the agent kept a briefing over its limit');
    } finally {
      await cleanup(s);
    }
  });
}
