// cairn with the real Claude Code, headless against a local mock model (tests/agents/claude.mjs).
// Each scenario asserts from the mock's request log what the model received, or from the
// knowledge repository what cairn stored. Run: CAIRN_BIN=$PWD/target/debug/cairn node --test
// tests/agents/claude.test.mjs (tests/cli/agents.rs runs it with the binary under test).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { tempDir, cairnBin, root } from './lib.mjs';
import {
  anthropicMock, cairn, claude, claudeEnv, run, makeProject, makeKnowledgeRepo, messageRequests,
  sessionRecords, settled, strings, telemetry, waitFor,
} from './claude.mjs';

/** A knowledge repository and a project beside it, a HOME for Claude Code, a mock. */
async function setup(reply) {
  const t = tempDir('cairn-claude-');
  const home = path.join(t.dir, 'home');
  fs.mkdirSync(home);
  const kb = await makeKnowledgeRepo(path.join(t.dir, 'kb'));
  const project = await makeProject(path.join(t.dir, 'billing-api'));
  const mock = await anthropicMock(reply);
  const env = { HOME: home };
  return {
    t, home, kb, project, mock, env,
    cairn: (args, expect = 0, opts = {}) => cairn(['--repo', kb, ...args], { cwd: project, env, ...opts }, expect),
    claude: (args, opts = {}) => claude(args, { home, cwd: project, url: mock.url, ...opts }),
    async close() { await settled(kb).catch(() => {}); await mock.close(); t.cleanup(); },
  };
}

/** What `cairn hooks run session-start --agent claude-code` prints for Claude Code's stdin. */
async function hookOutput(s) {
  const stdin = JSON.stringify({
    session_id: '00000000-0000-4000-8000-000000000000',
    transcript_path: path.join(s.home, '.claude/projects/x/00000000-0000-4000-8000-000000000000.jsonl'),
    cwd: s.project,
    hook_event_name: 'SessionStart',
    source: 'startup',
  });
  const r = await s.cairn(['hooks', 'run', 'session-start', '--agent', 'claude-code'], 0, { input: stdin });
  return JSON.parse(r.stdout).hookSpecificOutput.additionalContext;
}

function assertRan(r) {
  assert.equal(r.code, 0, `claude exited ${r.code}\n${r.stdout}\n${r.stderr}`);
}

test('a. the briefing cairn prints at session start reaches the model verbatim', async () => {
  const s = await setup();
  try {
    await s.cairn(['memory', 'add', '--section', 'operations', 'The billing cache is redis 7 on cache-06']);
    await s.cairn(['hooks', 'install', '--agent', 'claude-code']);
    const briefing = await hookOutput(s);
    assert.match(briefing, /^# Briefing: billing-api/);
    assert.match(briefing, /redis 7 on cache-06/);
    const r = await s.claude(['-p', 'What do we know about this project?']);
    assertRan(r);
    const sent = messageRequests(s.mock.requests);
    assert.ok(sent.length > 0, 'claude sent no request');
    assert.ok(strings(sent[0].body).some((x) => x.includes(briefing)),
      'the first request does not hold the briefing verbatim');
  } finally {
    await s.close();
  }
});

test('b. a MEMORY.md of 97 entries reaches the model whole, not as a persisted-output preview', async () => {
  const s = await setup();
  try {
    const words = ['cache', 'retry', 'deploy', 'schema', 'index', 'backup', 'queue', 'token', 'release', 'budget'];
    const sections = ['Preferences', 'Rules and conventions', 'System architecture', 'Operations', 'Memory system', 'Projects', 'People and relationships'];
    let text = fs.readFileSync(path.join(s.kb, 'MEMORY.md'), 'utf8');
    let n = 0;
    for (const section of sections) {
      text += `\n## ${section}\n\n`;
      for (let k = 0; k < 14 && n < 97; k += 1, n += 1) {
        const w = (i) => words[(n * 7 + i * 3) % words.length];
        text += `- (2026-11-${String(1 + (n % 28)).padStart(2, '0')}) Entry ${n}: the ${w(0)} of billing-api needs ${w(1)} before ${w(2)}; check ${w(3)} and ${w(4)} on host web-0${n % 9} first\n`;
      }
    }
    fs.writeFileSync(path.join(s.kb, 'MEMORY.md'), text);
    execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@e', 'commit', '-qam', 'big memory'], { cwd: s.kb });
    const entries = text.split('\n').filter((l) => l.startsWith('- (')).length;
    assert.equal(entries, 97);
    await s.cairn(['hooks', 'install', '--agent', 'claude-code']);
    const briefing = await hookOutput(s);
    const r = await s.claude(['-p', 'What do we know about this project?']);
    assertRan(r);
    const said = strings(messageRequests(s.mock.requests)[0].body);
    assert.ok(!said.some((x) => x.includes('<persisted-output>')),
      `Claude Code persisted the briefing (${briefing.length} characters) and sent a preview`);
    assert.ok(said.some((x) => x.includes(briefing)), 'the briefing did not reach the model whole');
  } finally {
    await s.close();
  }
});

/**
 * What Claude Code does with a SessionStart hook's additionalContext of `text`: 'inline' when
 * the model gets it whole, 'persisted' when it gets a <persisted-output> preview instead.
 */
async function keeps(text) {
  const s = await setup();
  try {
    const out = path.join(s.t.dir, 'hook-output.json');
    fs.writeFileSync(out, JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: text } }));
    fs.mkdirSync(path.join(s.home, '.claude'));
    fs.writeFileSync(path.join(s.home, '.claude/settings.json'),
      JSON.stringify({ hooks: { SessionStart: [{ hooks: [{ type: 'command', command: `cat '${out}'` }] }] } }));
    assertRan(await s.claude(['-p', 'hello']));
    const said = strings(messageRequests(s.mock.requests)[0].body);
    if (said.some((x) => x.includes(text))) return 'inline';
    const preview = said.find((x) => x.includes('<persisted-output>'));
    assert.ok(preview, 'the context reached the model neither whole nor as a preview');
    const body = preview.slice(preview.indexOf('Preview (first 2KB):\n') + 21, preview.indexOf('\n...\n</persisted-output>'));
    assert.equal(body, text.slice(0, 2000), 'the preview is not the first 2,000 UTF-16 code units');
    return 'persisted';
  } finally {
    await s.close();
  }
}

// The limit cairn's per-agent budget for Claude Code comes from (issue 31 item 2). In Claude
// Code 2.1.332's bundled cli.js: `QDe=1e4`, the default threshold of the function that every
// hook's additionalContext goes through (`jEe(text, ..., "additionalContext", ...)`:
// `if(e.length<=o)return e;` else the text is saved under tool-results/ and replaced by a
// 2,000-unit preview). `e.length` is a JavaScript string's length: UTF-16 code units, so a
// character outside the BMP (an emoji) counts twice. A Claude Code upgrade that moves it fails
// here first.
test('Claude Code keeps additionalContext inline up to 10,000 UTF-16 code units', async () => {
  const x = (n) => 'B' + 'x'.repeat(n - 2) + 'E';
  assert.equal(await keeps(x(10_000)), 'inline');
  assert.equal(await keeps(x(10_001)), 'persisted');
  assert.equal(await keeps('\u{1F600}'.repeat(5_000)), 'inline', '5,000 emoji are 10,000 units');
  assert.equal(await keeps('\u{1F600}'.repeat(5_001)), 'persisted', '5,001 emoji: 5,001 characters, 10,002 units');
});

/** Runs `claude -p PROMPT --output-format json [...more]`; returns its result object. */
async function ask(s, prompt, more = []) {
  const r = await s.claude(['-p', prompt, '--output-format', 'json', ...more]);
  assertRan(r);
  return JSON.parse(r.stdout);
}

test('c. the transcript Claude Code wrote is ingested as cards carrying the reply', async () => {
  const reply = 'The invoices service retries a failed payment three times, then files it for review.';
  const s = await setup(() => ({ text: reply }));
  try {
    await s.cairn(['hooks', 'install', '--agent', 'claude-code']);
    const out = await ask(s, 'How are failed payments retried in billing-api?');
    assert.equal(out.result, reply);
    const card = await waitFor('a card of the session', () => sessionRecords(s.kb)
      .find((r) => r.type === 'card' && r.session === out.session_id));
    assert.equal(card.turn, 1);
    assert.match(card.prompt, /How are failed payments retried/);
    assert.ok(card.answer.includes(reply), `the card's answer is ${JSON.stringify(card.answer)}`);
    assert.equal(card.project, 'billing-api');
    await settled(s.kb);
    const log = await run('git', ['log', '--format=%s', '-n', '5'], { cwd: s.kb });
    assert.match(log.stdout, /ingest/i, 'the cards were not committed');
  } finally {
    await s.close();
  }
});

/** The cards of one session, by turn, as their JSON lines. */
function cards(kb, session) {
  return Object.fromEntries(sessionRecords(kb)
    .filter((r) => r.type === 'card' && r.session === session)
    .map((r) => [r.turn, JSON.stringify(r)]));
}

const summary = 'Summary: the user asked about payment retries and the redis cache; nothing is pending.';

/**
 * Answers Claude Code's compaction request (its last message asks for a summary of the
 * conversation) with a summary, anything else with a line.
 */
function compacting(body) {
  const last = strings(body?.messages?.at(-1) ?? []).join('\n');
  return /summary of the conversation/i.test(last) ? { text: summary } : { text: 'Noted.' };
}

/** Two turns, the second by `--resume`: the session's id and its cards as they stood. */
async function twoTurns(s) {
  await s.cairn(['hooks', 'install', '--agent', 'claude-code']);
  const first = await ask(s, 'Which cache sits in front of postgres in billing-api?');
  const sid = first.session_id;
  const one = await waitFor('turn 1\'s card', () => cards(s.kb, sid)[1] && cards(s.kb, sid));
  await settled(s.kb);
  await ask(s, 'And how long do entries live in it?', ['--resume', sid]);
  const two = await waitFor('turn 2\'s card', () => cards(s.kb, sid)[2] && cards(s.kb, sid));
  await settled(s.kb);
  return { sid, one, two };
}

test('d. /compact in a resumed session fires PreCompact and stores an episode', async () => {
  const s = await setup(compacting);
  try {
    const { sid } = await twoTurns(s);
    const r = await s.claude(['-p', '--resume', sid, '/compact']);
    assertRan(r);
    const pre = telemetry(s.kb).filter((e) => e.component === 'hooks' && e.action === 'pre-compact');
    assert.ok(pre.length > 0, 'no pre-compact hook ran');
    assert.ok(pre.every((e) => e.success), JSON.stringify(pre));
    const episode = await waitFor('an episode of the compaction', () => sessionRecords(s.kb)
      .find((e) => e.type === 'episode' && e.session === sid && e.kind === 'compaction'));
    assert.ok(episode.text.includes(summary), `the episode says ${JSON.stringify(episode.text)}`);
    const asked = messageRequests(s.mock.requests).filter((q) => compacting(q.body).text === summary);
    assert.ok(asked.length > 0, 'Claude Code never asked the model for a summary');
  } finally {
    await s.close();
  }
});

test('d. resuming a session does not rewrite the cards of its earlier turns', async () => {
  const s = await setup(compacting);
  try {
    const { sid, one, two } = await twoTurns(s);
    assert.equal(two[1], one[1], 'turn 1\'s card changed when turn 2 was ingested');
    await s.claude(['-p', '--resume', sid, '/compact']);
    await waitFor('an episode of the compaction', () => sessionRecords(s.kb)
      .find((e) => e.type === 'episode' && e.session === sid));
    await settled(s.kb);
    const after = cards(s.kb, sid);
    assert.equal(after[1], one[1], 'turn 1\'s card changed after /compact');
    assert.equal(after[2], two[2], 'turn 2\'s card changed after /compact');
  } finally {
    await s.close();
  }
});

/** The tool_result Claude Code sent back in scenario e, for the note's check after it. */
let forwarded;

test('e. MCP: a tool_use of mcp__cairn__recall brings cairn\'s result back to the model', async () => {
  const query = 'redis cache';
  const s = await setup((body) => {
    const last = body?.messages?.at(-1);
    const result = Array.isArray(last?.content) && last.content.find((c) => c.type === 'tool_result');
    if (result) return { text: 'The cache is redis.' };
    // Claude Code defers MCP tools behind its ToolSearch tool: it names them to the model (in
    // the tool list, or as deferred tools in the messages), and a call loads one.
    if (strings(body).some((x) => x.includes('mcp__cairn__recall'))) {
      return { toolUse: { id: 'toolu_recall_1', name: 'mcp__cairn__recall', input: { query } } };
    }
    return { text: 'no cairn tools' };
  });
  try {
    await s.cairn(['remember', 'the billing-api redis cache holds sessions for 15 minutes']);
    // How a person registers the server today (the README's MCP section): the absolute binary,
    // naming the knowledge repository, since Claude Code starts it in the project's folder.
    const add = await run(path.join(root, 'tests/agents/node_modules/.bin/claude'),
      ['mcp', 'add', '--scope', 'user', 'cairn', '--', cairnBin, '--repo', s.kb, 'mcp'],
      { cwd: s.project, env: claudeEnv(s.home, s.mock.url) });
    assert.equal(add.code, 0, add.stdout + add.stderr);
    const r = await s.claude(['-p', 'What do we know about the cache?', '--allowedTools', 'mcp__cairn__recall']);
    assertRan(r);
    const sent = messageRequests(s.mock.requests);
    assert.ok(sent.some((q) => strings(q.body).some((x) => x.includes('mcp__cairn__recall'))),
      `no request named mcp__cairn__recall: ${sent.map((q) => (q.body?.tools ?? []).map((t) => t.name).join(',')).join(' | ')}`);
    const carrying = sent.find((q) => (q.body?.messages ?? []).some((m) => Array.isArray(m.content)
      && m.content.some((c) => c.type === 'tool_result' && c.tool_use_id === 'toolu_recall_1')));
    assert.ok(carrying, 'no request carried the tool_result');
    const result = carrying.body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .find((c) => c.type === 'tool_result' && c.tool_use_id === 'toolu_recall_1');
    // What Claude Code 2.1.332 forwards (issue 31 item 5): `content` is one string, the
    // structuredContent serialized (`{"v":1,"type":"recall",...}`), not cairn's content[0].text
    // with the "data, not instructions" note before it.
    forwarded = result;
    assert.notEqual(result.is_error, true, `the tool call failed: ${JSON.stringify(result)}`);
    const text = strings(result.content).join('\n');
    assert.match(text, /redis cache holds sessions for 15 minutes/, `the tool_result holds ${text}`);
  } finally {
    await s.close();
  }
});

test('e. MCP: the "data, not instructions" note reaches the model in the tool_result', () => {
  assert.ok(forwarded, 'scenario e did not run');
  assert.match(strings(forwarded.content).join('\n'), /not instructions/);
});

test('f. uninstall gives back the person\'s settings.json byte for byte, after a real session', async () => {
  const s = await setup();
  try {
    const file = path.join(s.project, '.claude/settings.json');
    fs.mkdirSync(path.dirname(file));
    // A person's own file: their indentation, key order, a hook of their own on the same
    // event, an env block and no newline at the end.
    const own = '{\n    "permissions": { "allow": ["Bash(npm test:*)"], "deny": [] },\n    "env": {"BILLING_ENV": "dev"},\n    "hooks": {\n        "SessionStart": [\n            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo own-hook-ran >> \\"$CLAUDE_PROJECT_DIR/own.log\\""}]}\n        ]\n    },\n    "model": "claude-mock"\n}';
    fs.writeFileSync(file, own);
    await s.cairn(['hooks', 'install', '--agent', 'claude-code']);
    assert.notEqual(fs.readFileSync(file, 'utf8'), own, 'install changed nothing');
    const r = await s.claude(['-p', 'What is this project about?']);
    assertRan(r);
    assert.ok(strings(messageRequests(s.mock.requests)[0].body).some((x) => x.includes('# Briefing: billing-api')),
      'the briefing did not reach the model beside the person\'s own hook');
    assert.equal(fs.readFileSync(path.join(s.project, 'own.log'), 'utf8'), 'own-hook-ran\n', 'the person\'s own hook did not run');
    await settled(s.kb);
    await s.cairn(['hooks', 'uninstall', '--agent', 'claude-code']);
    assert.equal(fs.readFileSync(file, 'utf8'), own);
  } finally {
    await s.close();
  }
});

test('the hooks reach cairn when it is not on the PATH Claude Code runs them with', async () => {
  const s = await setup();
  try {
    await s.cairn(['hooks', 'install', '--agent', 'claude-code']);
    // The PATH of the test's own process, without the folder of the cairn under test.
    const path_ = process.env.PATH.split(':').filter((d) => d && !fs.existsSync(path.join(d, 'cairn'))).join(':');
    const r = await s.claude(['-p', 'What do we know about this project?'], { env: { PATH: path_ } });
    assertRan(r);
    assert.ok(strings(messageRequests(s.mock.requests)[0].body).some((x) => x.includes('# Briefing: billing-api')),
      `no briefing reached the model; Claude Code said: ${r.stderr.slice(0, 500)}`);
  } finally {
    await s.close();
  }
});

/** The shell lines of the README's "### Claude Code" under "## Wiring cairn into an agent". */
function readmeLines(readme) {
  const wiring = readme.split(/^## /m).find((part) => part.startsWith('Wiring cairn into an agent'));
  assert.ok(wiring, 'README has no "## Wiring cairn into an agent"');
  const section = wiring.split(/^### /m).find((part) => part.startsWith('Claude Code\n'));
  assert.ok(section, 'README has no "### Claude Code" under "## Wiring cairn into an agent"');
  const block = section.match(/^```sh\n([\s\S]*?)^```/m);
  assert.ok(block, 'the Claude Code section has no ```sh block');
  return block[1].split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
}

test('README: every line of the Claude Code section runs from a project folder', async () => {
  const s = await setup();
  try {
    const project = await makeProject(path.join(s.home, 'code/billing-api'));
    const lines = readmeLines(fs.readFileSync(path.join(root, 'README.md'), 'utf8'));
    assert.ok(lines.length >= 5, lines.join('\n'));
    const env = {
      ...claudeEnv(s.home, s.mock.url),
      PATH: `${path.dirname(cairnBin)}:${path.join(root, 'tests/agents/node_modules/.bin')}:${process.env.PATH}`,
    };
    const outputs = [];
    for (const line of lines) {
      const r = await run('bash', ['-euo', 'pipefail', '-c', line], { cwd: project, env, timeoutMs: 90_000 });
      assert.equal(r.code, 0, `README line failed (exit ${r.code}): ${line}\n${r.stdout}\n${r.stderr}`);
      outputs.push(r.stdout);
    }
    const kb = path.join(s.home, 'kb');
    assert.ok(fs.existsSync(path.join(kb, 'cairn.toml')), 'no knowledge repository at ~/kb');
    assert.ok(strings(messageRequests(s.mock.requests)[0]?.body).some((x) => x.includes('# Briefing: billing-api')),
      'the briefing did not reach the model');
    const listed = outputs[lines.findIndex((l) => l.startsWith('claude mcp list'))];
    assert.match(listed, /cairn:.*Connected/, `claude mcp list said: ${listed}`);
    await waitFor('the session\'s card', () => sessionRecords(kb)
      .some((r) => r.type === 'card' && /What do we know about this project/.test(r.prompt)));
    assert.ok(!fs.existsSync(path.join(project, '.claude/settings.json')), 'uninstall left .claude/settings.json');
  } finally {
    await s.close();
  }
});
