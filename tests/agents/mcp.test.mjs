// cairn's MCP server registered with the real Claude Code and Codex, from a code project's
// folder (issue 31, item 4): `cairn mcp install` writes each agent's own configuration with
// cairn's absolute path, and each agent's own `mcp list` / `mcp get` then shows the server
// connected (Claude Code starts it and speaks MCP) or enabled (Codex; the server is then
// started as Codex would, in the project folder, and asked for its tools). The README's
// `claude mcp add --scope user cairn -- cairn mcp` and `codex mcp add cairn -- cairn mcp` work from the
// project folder once the default knowledge repository is set. Uninstall gives each file back
// byte for byte. Every run has a throwaway HOME, CODEX_HOME and a PATH without cairn (but
// where a test puts it there itself). The hooks installed with no cairn on PATH still brief
// the real Claude Code (a local mock of the Messages API). Nothing here touches the network.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';

import { bin, cairnBin, run, sse, startMock, tempDir } from './lib.mjs';

const claudeBin = path.join(bin, 'claude');
const codexBin = path.join(bin, 'codex');

/** PATH without any folder that holds a `cairn`: what an agent started from a desktop has. */
function pathWithoutCairn() {
  return (process.env.PATH || '/usr/bin:/bin')
    .split(':')
    .filter((d) => d && !fs.existsSync(path.join(d, 'cairn')))
    .join(':');
}

/** A person's machine: HOME, CODEX_HOME, a knowledge repository made the default, a project. */
async function machine() {
  const t = tempDir('cairn-mcp-');
  const home = path.join(t.dir, 'home');
  const codexHome = path.join(home, '.codex');
  const project = path.join(t.dir, 'project');
  fs.mkdirSync(codexHome, { recursive: true });
  fs.mkdirSync(project, { recursive: true });
  execFileSync('git', ['init', '-q', project]);
  const env = {
    HOME: home,
    CODEX_HOME: codexHome,
    PATH: pathWithoutCairn(),
    TMPDIR: process.env.TMPDIR || '/tmp',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
  };
  const kb = path.join(t.dir, 'kb');
  await must(cairnBin, ['init', kb, '--default'], { cwd: project, env });
  return { ...t, home, codexHome, project, kb, env };
}

async function must(cmd, args, opts) {
  const r = await run(cmd, args, { timeoutMs: 90_000, ...opts });
  assert.equal(r.code, 0, `${cmd} ${args.join(' ')} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
  return r;
}

/** The bytes of `file`, or null when there is none. */
const bytes = (file) => (fs.existsSync(file) ? fs.readFileSync(file) : null);

/** Starts `command args` in `cwd` as an agent would, and lists its tools over MCP (stdio). */
function listTools(command, args, { cwd, env }) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`no answer: ${err}`)); }, 30_000);
    child.stderr.on('data', (d) => { err += d; });
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('close', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${err}`)); });
    child.stdout.on('data', (d) => {
      out += d;
      for (const line of out.split('\n')) {
        if (!line.trim()) continue;
        let msg;
        try { msg = JSON.parse(line); } catch { continue; }
        if (msg.id === 1) {
          clearTimeout(timer);
          child.removeAllListeners('close');
          child.kill();
          resolve((msg.result?.tools || []).map((t) => t.name));
        }
      }
    });
    const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
    send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } } });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  });
}

test('claude-code: cairn mcp install from a project folder, claude mcp list shows cairn connected', async () => {
  const m = await machine();
  try {
    const file = path.join(m.home, '.claude.json');
    // Claude Code's own state first, so that the file is one it wrote.
    await must(claudeBin, ['mcp', 'list'], { cwd: m.project, env: m.env });
    const before = bytes(file);

    const installed = await must(cairnBin, ['mcp', 'install', '--agent', 'claude-code', '--json'], { cwd: m.project, env: m.env });
    const data = JSON.parse(installed.stdout).data;
    assert.equal(data.file, file);
    assert.deepEqual(data.command, [cairnBin, '--repo', fs.realpathSync(m.kb), 'mcp']);
    await must(cairnBin, ['mcp', 'uninstall', '--agent', 'claude-code'], { cwd: m.project, env: m.env });
    assert.deepEqual(bytes(file), before, 'uninstall gives ~/.claude.json back byte for byte');

    await must(cairnBin, ['mcp', 'install', '--agent', 'claude-code'], { cwd: m.project, env: m.env });
    const list = await must(claudeBin, ['mcp', 'list'], { cwd: m.project, env: m.env });
    const line = list.stdout.split('\n').find((l) => l.startsWith('cairn:'));
    assert.ok(line, list.stdout);
    assert.match(line, /Connected/, list.stdout);
    assert.ok(line.includes(cairnBin), line);

    await must(cairnBin, ['mcp', 'uninstall', '--agent', 'claude-code'], { cwd: m.project, env: m.env });
    const after = await must(claudeBin, ['mcp', 'list'], { cwd: m.project, env: m.env });
    assert.ok(!after.stdout.includes('cairn:'), after.stdout);
  } finally {
    m.cleanup();
  }
});

test('codex: cairn mcp install from a project folder, codex mcp get shows cairn enabled, and it serves there', async () => {
  const m = await machine();
  try {
    const file = path.join(m.codexHome, 'config.toml');
    fs.writeFileSync(file, 'model = "gpt-5"\n# a person\'s own settings\n[projects."/somewhere"]\ntrust_level = "trusted"\n');
    const before = bytes(file);

    await must(cairnBin, ['mcp', 'install', '--agent', 'codex'], { cwd: m.project, env: m.env });
    const got = await must(codexBin, ['mcp', 'get', 'cairn', '--json'], { cwd: m.project, env: m.env });
    const server = JSON.parse(got.stdout);
    assert.equal(server.enabled, true, got.stdout);
    assert.equal(server.transport.command, cairnBin);
    assert.deepEqual(server.transport.args, ['--repo', fs.realpathSync(m.kb), 'mcp']);
    const list = await must(codexBin, ['mcp', 'list'], { cwd: m.project, env: m.env });
    assert.match(list.stdout, /^cairn\s.*enabled/m, list.stdout);
    // Started as Codex starts it: in the project folder, with the agent's PATH (no cairn).
    const tools = await listTools(server.transport.command, server.transport.args, { cwd: m.project, env: m.env });
    assert.ok(tools.includes('recall') && tools.includes('brief'), tools.join(','));

    await must(cairnBin, ['mcp', 'uninstall', '--agent', 'codex'], { cwd: m.project, env: m.env });
    assert.deepEqual(bytes(file), before, 'uninstall gives config.toml back byte for byte');
    const gone = await run(codexBin, ['mcp', 'get', 'cairn'], { cwd: m.project, env: m.env });
    assert.notEqual(gone.code, 0, gone.stdout);
  } finally {
    m.cleanup();
  }
});

test("the README's `claude mcp add --scope user cairn -- cairn mcp` and `codex mcp add` work from a project folder", async () => {
  const m = await machine();
  try {
    // cairn on PATH, as `cargo install` puts it there; the default repository set by init.
    const cargoBin = path.join(m.home, '.cargo/bin');
    fs.mkdirSync(cargoBin, { recursive: true });
    fs.symlinkSync(cairnBin, path.join(cargoBin, 'cairn'));
    const env = { ...m.env, PATH: `${cargoBin}:${m.env.PATH}` };

    await must(claudeBin, ['mcp', 'add', '--scope', 'user', 'cairn', '--', 'cairn', 'mcp'], { cwd: m.project, env });
    const list = await must(claudeBin, ['mcp', 'list'], { cwd: m.project, env });
    assert.match(list.stdout, /^cairn: cairn mcp - .*Connected/m, list.stdout);

    await must(codexBin, ['mcp', 'add', 'cairn', '--', 'cairn', 'mcp'], { cwd: m.project, env });
    const got = JSON.parse((await must(codexBin, ['mcp', 'get', 'cairn', '--json'], { cwd: m.project, env })).stdout);
    assert.equal(got.enabled, true);
    const tools = await listTools(got.transport.command, got.transport.args, { cwd: m.project, env });
    assert.ok(tools.includes('recall'), tools.join(','));
  } finally {
    m.cleanup();
  }
});

/** A mock of the Anthropic Messages API that answers every request "Done." (streamed or not). */
function anthropicMock() {
  return startMock(async (req, res, body) => {
    if (req.url.startsWith('/v1/messages/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ input_tokens: 100 }));
    }
    const usage = { input_tokens: 100, output_tokens: 2 };
    const message = { id: 'msg_1', type: 'message', role: 'assistant', model: body?.model || 'm', content: [], stop_reason: null, stop_sequence: null, usage };
    if (!body?.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ ...message, content: [{ type: 'text', text: 'Done.' }], stop_reason: 'end_turn' }));
    }
    sse(res, [
      { event: 'message_start', data: { type: 'message_start', message } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Done.' } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } } },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
  });
}

// Issue 31, item 8: the hooks ran `cairn` from PATH; Claude Code without it on PATH printed
// `/bin/sh: cairn: not found` and the model got no briefing.
test('claude-code: hooks installed from a project folder brief the model with no cairn on PATH', async () => {
  const m = await machine();
  const mock = await anthropicMock();
  try {
    await must(cairnBin, ['memory', 'add', '--section', 'operations', 'Deploys go through the tangerine pipeline'], { cwd: m.project, env: m.env });
    const installed = await must(cairnBin, ['hooks', 'install', '--agent', 'claude-code', '--json'], { cwd: m.project, env: m.env });
    const start = JSON.parse(installed.stdout).data.commands['session-start'];
    assert.ok(start.startsWith(`${cairnBin} --repo `), start);
    const env = { ...m.env, ANTHROPIC_BASE_URL: mock.url, ANTHROPIC_API_KEY: 'sk-ant-api03-mock-key-for-a-local-server' };
    const r = await run(claudeBin, ['-p', 'hello'], { cwd: m.project, env, timeoutMs: 90_000 });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.ok(!r.stderr.includes('not found'), r.stderr);
    const sent = mock.requests.filter((q) => q.path.startsWith('/v1/messages') && !q.path.includes('count_tokens'));
    assert.ok(sent.some((q) => q.text.includes('tangerine pipeline')), 'the briefing reached the model');
  } finally {
    await mock.close();
    m.cleanup();
  }
});
