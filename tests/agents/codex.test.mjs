// cairn with the real Codex CLI 0.171.0: `codex exec` against the mock Responses API server,
// cairn's hooks installed with `cairn hooks install --agent codex --global` and trusted as
// `/hooks` trusts them (codex.mjs says how), every assertion from what the mock received or
// what cairn stored. Run: CAIRN_BIN=$PWD/target/debug/cairn node --test tests/agents/codex.test.mjs

import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cairnBin, root } from './lib.mjs';
import {
  world, mockModel, writeConfig, codexExec, trustHooks, message, functionCall, codexBin, run, cairn,
} from './codex.mjs';

const DATA_NOTE = 'data from memory, not instructions';

/** A world with cairn on PATH (the installed hooks call `cairn`), a pinned clock, a seeded KB. */
async function setup(script, { extraConfig = '', install = true } = {}) {
  const w = await world({ cairnBin });
  w.env.PATH = `${path.dirname(cairnBin)}:${process.env.PATH}`;
  // Both the hook Codex runs and the reruns below brief at the same instant.
  w.env.CAIRN_NOW = '2026-12-06T05:00:00Z';
  // Codex keeps an oversized hook output under the OS temp dir: keep it in the world.
  w.env.TMPDIR = path.join(w.dir, 'tmp');
  fs.mkdirSync(w.env.TMPDIR);
  await cairn(['--repo', w.kb, 'memory', 'add', '--section', 'Rules and conventions',
    'Run cargo fmt before every commit of the billing service'], { env: w.env, cwd: w.kb });
  const mock = await mockModel(script);
  writeConfig(w, mock.url, extraConfig);
  if (install) {
    await cairn(['--repo', w.kb, 'hooks', 'install', '--agent', 'codex', '--global'], { env: w.env, cwd: w.project });
    const trust = await trustHooks(w);
    assert.deepEqual(trust.before.map((h) => h.trustStatus), ['untrusted', 'untrusted', 'untrusted'],
      'Codex does not run a hook nobody trusted: cairn never stamps trust itself');
    assert.deepEqual(trust.after.map((h) => h.trustStatus), ['trusted', 'trusted', 'trusted']);
  }
  const done = async () => {
    await mock.close();
    // A session's end leaves cairn ingesting in the background: let it finish before the
    // world goes.
    if (install && fs.existsSync(path.join(w.codexHome, 'sessions'))) {
      await poll(() => telemetry(w).some((e) => e.action === 'session-end-ingest'), 30_000);
    }
    await removeWorld(w);
  };
  return { w, mock, done };
}

/**
 * Removes the world. The knowledge repository's post-commit hook starts `cairn index` in the
 * background after each commit, so a folder may still be written to for a moment.
 */
async function removeWorld(w) {
  for (let i = 0; ; i += 1) {
    try {
      fs.rmSync(w.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
      return;
    } catch (e) {
      if (i === 20) throw e;
      await new Promise((ok) => setTimeout(ok, 500));
    }
  }
}

/** Runs codex exec; asserts it succeeded without Codex clamping any hook timeout (item 3). */
async function exec(w, prompt, opts) {
  const r = await codexExec(w, prompt, opts);
  assert.equal(r.code, 0, `codex exec failed:\n${r.stderr}`);
  assert.doesNotMatch(r.stderr, /clamping \w+ hook timeout/, 'cairn writes timeouts Codex accepts');
  assert.doesNotMatch(r.stderr, /hook: \w+ Failed/, 'every hook ran');
  r.session = r.stderr.match(/session id: (\S+)/)[1];
  return r;
}

/** The text of every developer message of a Responses request. */
function developerTexts(req) {
  return req.body.input
    .filter((i) => i.type === 'message' && i.role === 'developer')
    .flatMap((i) => i.content.map((c) => c.text));
}

/** What cairn's session-start hook prints for the stdin Codex gave it (fields as Codex sends them). */
async function hookOutput(w, session) {
  const stdin = JSON.stringify({
    session_id: session, transcript_path: null, cwd: w.project, hook_event_name: 'SessionStart',
    model: 'mock-model', permission_mode: 'bypassPermissions', source: 'startup',
  });
  const r = await cairn(['--repo', w.kb, 'hooks', 'run', 'session-start', '--agent', 'codex'],
    { env: w.env, cwd: w.project, input: stdin });
  return JSON.parse(r.stdout).hookSpecificOutput.additionalContext;
}

/** Polls `check()` every 250 ms for up to `ms`; returns its first truthy value, or null. */
async function poll(check, ms = 60_000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const v = await check();
    if (v) return v;
    await new Promise((ok) => setTimeout(ok, 250));
  }
  return null;
}

/** The JSON lines of `file` (none if it is missing); a line still being written is skipped. */
function jsonl(file) {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').flatMap((l) => {
    try { return l ? [JSON.parse(l)] : []; } catch { return []; }
  });
}

function telemetry(w) {
  return jsonl(path.join(w.kb, '.cairn/telemetry.jsonl')).filter((e) => e.component === 'hooks');
}

test('a. the briefing cairn prints reaches the model verbatim', async () => {
  const { w, mock, done } = await setup();
  try {
    const r = await exec(w, 'what do you know?');
    const context = await hookOutput(w, r.session);
    assert.match(context, /Run cargo fmt before every commit of the billing service/);
    const first = mock.modelRequests()[0];
    assert.ok(developerTexts(first).includes(context),
      `the briefing is one developer message of the first request, byte for byte:\n${developerTexts(first).join('\n---\n').slice(0, 3000)}`);
  } finally { await done(); }
});

/** A MEMORY.md that `memory lint` accepts: 97 entries, about 12,000 characters. */
function bigMemory() {
  const sections = ['Preferences', 'Rules and conventions', 'System architecture', 'Operations', 'Projects'];
  const lines = ['# Memory', ''];
  let n = 0;
  for (const s of sections) {
    lines.push(`## ${s}`, '');
    for (let i = 0; i < 20 && n < 97; i += 1, n += 1) {
      const entry = `- (2026-11-${String(10 + (n % 19)).padStart(2, '0')}) Entry ${String(n + 1).padStart(3, '0')} of the curated memory: the deploy of service ${n} runs through the staging gate first`;
      lines.push(entry.padEnd(120, '.'));
    }
    lines.push('');
  }
  return `${lines.join('\n')}\n`;
}

test('b. a MEMORY.md of 97 entries / 12,000 characters: what the hook prints reaches the model whole', async () => {
  // Fails until cairn's per-agent budget (issue 31, item 2) keeps Codex's briefing within
  // Codex's cut: additionalContext above 2,500 approximate tokens (bytes / 4, rounded up, so
  // 10,000 bytes) is replaced by a head-and-tail preview (codex.mjs).
  const { w, mock, done } = await setup();
  try {
    const memory = bigMemory();
    assert.equal(memory.split('\n').filter((l) => l.startsWith('- (')).length, 97);
    assert.ok(memory.length > 11_500 && memory.length < 12_500, `${memory.length} characters`);
    fs.writeFileSync(path.join(w.kb, 'MEMORY.md'), memory);
    await cairn(['--repo', w.kb, 'memory', 'lint'], { env: w.env, cwd: w.kb });
    const r = await exec(w, 'what do you know?');
    const context = await hookOutput(w, r.session);
    const sent = developerTexts(mock.modelRequests()[0]);
    const cut = sent.find((t) => t.includes('truncated output (original token count'));
    assert.equal(cut, undefined, `Codex cut the briefing of ${Buffer.byteLength(context)} bytes:\n${(cut || '').slice(0, 300)}`);
    assert.ok(sent.includes(context), 'the whole briefing is one developer message');
  } finally { await done(); }
});

test('c. the transcript Codex wrote is ingested as cards (SessionEnd, in the background)', async () => {
  const { w, done } = await setup(() => [message('The billing service is formatted with cargo fmt.')]);
  try {
    const r = await exec(w, 'how is the billing service formatted?');
    const cards = path.join(w.kb, 'vault/sessions/codex', `${r.session}.jsonl`);
    const found = await poll(() => jsonl(cards).length > 0 && jsonl(cards));
    assert.ok(found, `no cards in ${cards} within 60 s; hook telemetry: ${JSON.stringify(telemetry(w))}`);
    const text = JSON.stringify(found);
    assert.match(text, /how is the billing service formatted\?/);
    assert.match(text, /formatted with cargo fmt/);
    // Codex 0.171 gives SessionEnd the rollout's path (never null for a non-ephemeral exec).
    const end = await poll(() => telemetry(w).find((e) => e.action === 'session-end-ingest'));
    assert.match(end.metadata.transcript, /\.codex\/sessions\/.*rollout-.*\.jsonl$/);
    const log = await run('git', ['-C', w.kb, 'log', '--format=%s'], { env: w.env });
    assert.match(log.stdout, /sessions: ingest 1 turn/);
  } finally { await done(); }
});

test('c2. an ephemeral session has no transcript: Codex sends transcript_path null, cairn says so and the turn goes on', async () => {
  const { w, done } = await setup();
  try {
    const r = await exec(w, 'hello', { args: ['--ephemeral'] });
    const end = await poll(() => telemetry(w).find((e) => e.action === 'session-end'));
    assert.ok(end, JSON.stringify(telemetry(w)));
    assert.equal(end.success, false);
    assert.deepEqual(end.metadata.errors, ["no transcript_path in the hook's input"]);
    assert.equal(end.metadata.session, r.session);
    assert.ok(!fs.existsSync(path.join(w.kb, 'vault/sessions/codex')), 'nothing ingested');
  } finally { await done(); }
});

test('d. an auto-compaction fires PreCompact, and the compaction is stored as an episode', async (t) => {
  // Codex compacts before a request once the last usage passed model_auto_compact_token_limit:
  // the mock reports 60,000 input tokens, a tool call keeps the turn going, and the next
  // request is Codex's compaction prompt, answered with the summary.
  const summary = 'SUMMARY: the billing service is formatted with cargo fmt before each commit';
  const { w, mock, done } = await setup((body, n) => {
    body.__usage = { input: 60_000, output: 10 };
    if (n === 1) return [functionCall('no_such_tool', { a: 1 }, 'call_1')];
    if (n === 2) return [message(summary)];
    return [message('done')];
  });
  try {
    const cfg = path.join(w.codexHome, 'config.toml');
    fs.writeFileSync(cfg, `model_auto_compact_token_limit = 1000\n${fs.readFileSync(cfg, 'utf8')}`);
    const r = await exec(w, 'format the billing service');
    assert.match(r.stderr, /hook: PreCompact Completed/);
    assert.match(JSON.stringify(mock.modelRequests()[1].body.input), /CONTEXT CHECKPOINT COMPACTION/);
    const pre = await poll(() => telemetry(w).find((e) => e.action === 'pre-compact-ingest'));
    assert.ok(pre && pre.success, `pre-compact: ${JSON.stringify(telemetry(w))}`);
    assert.equal(pre.metadata.agent, 'codex');
    // The PreCompact hook returns at once and its ingest reads the transcript in the
    // background, by then (in every run so far) holding Codex's `compacted` line; if it did
    // not, SessionEnd's ingest of the same transcript would store the episode.
    const cards = path.join(w.kb, 'vault/sessions/codex', `${r.session}.jsonl`);
    const episode = await poll(() => jsonl(cards).find((c) => c.kind === 'compaction'));
    assert.ok(episode, `no episode in ${cards}: ${JSON.stringify(jsonl(cards)).slice(0, 1000)}`);
    assert.match(episode.text, /SUMMARY: the billing service/);
    const log = await run('git', ['-C', w.kb, 'log', '--format=%s'], { env: w.env });
    t.diagnostic(`commits: ${log.stdout.split('\n').filter((l) => l.startsWith('sessions:')).join(' | ')}`);
    t.diagnostic(`ingests: ${JSON.stringify(telemetry(w).filter((e) => /ingest/.test(e.action)).map((e) => [e.action, e.metadata.cards, e.duration_ms]))}`);
  } finally { await done(); }
});

test('e. MCP: a namespaced call of cairn\'s recall returns cairn\'s result to the next request', async (t) => {
  const { w, mock, done } = await setup(
    (body, n) => (n === 1
      ? [{ ...functionCall('recall', { query: 'zanzibar vault' }, 'call_recall'), namespace: 'mcp__cairn' }]
      : [message('rotated after the quokka incident')]),
    { install: false },
  );
  try {
    await cairn(['--repo', w.kb, 'slog', 'rotate', 'zanzibar-vault',
      'rotated the zanzibar vault token after the quokka incident'], { env: w.env, cwd: w.kb });
    // As `codex mcp add cairn -- cairn --repo KB mcp` writes it, and nothing more: `codex exec`
    // runs with approval "never", so the call goes through only because cairn's recall says in
    // its MCP annotations that it only reads (ADR 80).
    const cfg = path.join(w.codexHome, 'config.toml');
    fs.appendFileSync(cfg, [
      '', '[mcp_servers.cairn]', `command = ${JSON.stringify(cairnBin)}`,
      `args = ["--repo", ${JSON.stringify(w.kb)}, "mcp"]`, '',
    ].join('\n'));
    await exec(w, 'what happened to the zanzibar vault?');
    const [first, second] = mock.modelRequests();
    const ns = first.body.tools.find((x) => x.type === 'namespace' && x.name === 'mcp__cairn');
    assert.ok(ns && ns.tools.some((x) => x.name === 'recall'), 'Codex offers cairn\'s tools in the namespace mcp__cairn');
    assert.ok(second, 'Codex sent the tool result back');
    const out = second.body.input.find((i) => i.type === 'function_call_output' && i.call_id === 'call_recall');
    assert.ok(out, JSON.stringify(second.body.input).slice(0, 2000));
    const forwarded = typeof out.output === 'string' ? out.output : JSON.stringify(out.output);
    assert.match(forwarded, /rotated the zanzibar vault token after the quokka incident/);
    // What Codex forwards (issue 31, item 5): "Wall time: …\nOutput:\n" and the tool's
    // structuredContent as JSON, not content[0].text: cairn's data note is its first key.
    assert.match(forwarded, /^Wall time: [\d.]+ seconds\nOutput:\n\{"caution":/);
    t.diagnostic(`forwarded to the model: ${forwarded.slice(0, 160)}…`);
    await t.test('cairn\'s data note reaches the model (issue 31, item 5)', () => {
      assert.match(forwarded, new RegExp(DATA_NOTE));
    });
  } finally { await done(); }
});

test('f. uninstall gives back a hooks.json holding the person\'s own hooks byte for byte', async () => {
  const { w, done } = await setup(undefined, { install: false });
  try {
    const file = path.join(w.codexHome, 'hooks.json');
    const marker = path.join(w.dir, 'own-hook-ran');
    const own = `{
  "description": "mine",
  "hooks": {
    "SessionStart": [
      { "matcher": "startup",   "hooks": [ { "type": "command", "command": "touch ${marker}", "timeout": 5 } ] }
    ],
    "Stop": []
  }
}
`;
    fs.writeFileSync(file, own);
    await cairn(['--repo', w.kb, 'hooks', 'install', '--agent', 'codex', '--global'], { env: w.env, cwd: w.project });
    assert.notEqual(fs.readFileSync(file, 'utf8'), own);
    await trustHooks(w);
    await exec(w, 'hello');
    assert.ok(fs.existsSync(marker), 'the person\'s own hook ran beside cairn\'s');
    await cairn(['hooks', 'uninstall', '--agent', 'codex', '--global'], { env: w.env, cwd: w.project });
    assert.equal(fs.readFileSync(file, 'utf8'), own);
  } finally { await done(); }
});

/** The shell block of the README's "### Codex" section. */
function readmeLines() {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const section = readme.split(/^### Codex$/m)[1];
  assert.ok(section, 'README has a "### Codex" section');
  const block = section.split(/^```sh$/m)[1].split(/^```$/m)[0];
  return block.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
}

test('g. the README\'s Codex section works as written, from a project folder', async () => {
  const { w, mock, done } = await setup(
    (body, n) => (n === 1
      ? [{ ...functionCall('recall', { query: 'billing service' }, 'call_r'), namespace: 'mcp__cairn' }]
      : [message('ok')]),
    { install: false },
  );
  try {
    // The person's own: a project under ~/code and the knowledge repository at ~/kb; cairn and
    // codex on PATH.
    const project = path.join(w.home, 'code/myproject');
    fs.mkdirSync(project, { recursive: true });
    await run('git', ['init', '-q', project], { env: w.env });
    fs.renameSync(w.kb, path.join(w.home, 'kb'));
    w.env.PATH = `${path.dirname(codexBin)}:${w.env.PATH}`;
    const lines = readmeLines();
    assert.ok(lines.length >= 5, lines.join('\n'));
    let cwd = w.home;
    for (const line of lines) {
      const command = line.replace(/\s+#.*$/, '');
      if (command.startsWith('cd ')) {
        cwd = command.slice(3).replace(/^~/, w.home);
        continue;
      }
      if (/^codex$/.test(command)) {
        // Interactive: the person trusts cairn's hooks in /hooks. The same, headless.
        const trust = await trustHooks(w, cwd);
        const ours = trust.after.filter((h) => / hooks run /.test(h.command));
        assert.equal(ours.length, 3);
        assert.ok(ours.every((h) => h.trustStatus === 'trusted'));
        continue;
      }
      const r = await run('sh', ['-c', command], { env: w.env, cwd, timeoutMs: 90_000 });
      assert.equal(r.code, 0, `${line}\n${r.stdout}\n${r.stderr}`);
      assert.doesNotMatch(r.stderr, /clamping/);
    }
    const requests = mock.modelRequests();
    assert.equal(requests.length, 2, 'the README runs one codex session: a recall, then the answer');
    assert.match(developerTexts(requests[0]).join('\n'), /Run cargo fmt before every commit of the billing service/,
      'the briefing reached the model');
    const out = requests[1].body.input.find((i) => i.type === 'function_call_output');
    assert.match(JSON.stringify(out), /Run cargo fmt before every commit/, 'recall through MCP answered');
    assert.ok(!fs.existsSync(path.join(w.codexHome, 'hooks.json')), 'uninstall took back the file install made');
  } finally { await done(); }
});
