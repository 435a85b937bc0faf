// cairn with the real pi (0.73.1), run headless (`pi -p --offline`) against the Chat Completions
// mock: what the model received, what cairn stored, what uninstall gave back. See pi.mjs for how
// pi is driven.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cairn, cairnBin, root, run, tempDir } from './lib.mjs';
import {
  occurrences, piBin, piEnv, piHome, repoAndProject, runPi, sessionFiles, startPiMock, systemPrompt,
  timeToFirstRequest, turns, until,
} from './pi.mjs';

/** A mock, a HOME for pi, a knowledge repository and a project; `done()` cleans up. */
async function setup(options = {}) {
  const t = tempDir('cairn-pi-');
  const mock = await startPiMock(options.mock);
  const pi = piHome(t.dir, mock.url, options.home);
  const { repo, project, env } = await repoAndProject(t.dir, pi.home);
  return {
    ...pi, dir: t.dir, mock, repo, project, env,
    done: async () => {
      await mock.close();
      // The ingest a hook started runs on after pi: let it finish before the folder goes.
      await until(() => {
        const events = hookEvents(repo);
        const started = events.filter((e) => e.metadata?.detached).length;
        return events.filter((e) => e.action.endsWith('-ingest')).length >= started;
      });
      fs.rmSync(t.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    },
  };
}

/** `cairn hooks run session-start --agent pi` for `cwd`, as the extension runs it: its stdout. */
async function briefingFor(s, cwd) {
  const input = JSON.stringify({ hook_event_name: 'session_start', cwd, reason: 'startup' });
  const r = await cairn(['--repo', s.repo, 'hooks', 'run', 'session-start', '--agent', 'pi'], { env: s.env, cwd, input });
  return r.stdout.trim();
}

test('the briefing reaches the model in the system prompt, once, at every prompt', async () => {
  const s = await setup();
  try {
    await cairn(['--repo', s.repo, 'memory', 'add', '--section', 'Rules and conventions',
      'Run cargo fmt before every commit of the billing service'], { env: s.env });
    const install = await cairn(['--repo', s.repo, 'hooks', 'install', '--agent', 'pi'], { env: s.env, cwd: s.project });
    const briefing = await briefingFor(s, s.project);
    assert.match(briefing, /Run cargo fmt before every commit/);

    const before = hookEvents(s.repo).filter((e) => e.action === 'session-start').length;
    const r = await runPi({ home: s.home, cwd: s.project, prompts: ['What are the rules here?', 'And the second question?'] });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /cairn:/, r.stderr);
    const sent = turns(s.mock.requests);
    assert.equal(sent.length, 2, 'one request a prompt');
    for (const request of sent) {
      assert.equal(occurrences(systemPrompt(request), briefing), 1, systemPrompt(request));
      assert.ok(systemPrompt(request).startsWith('You are'), "pi's own prompt comes first");
    }
    assert.doesNotMatch(install.stdout + install.stderr, /trust/, 'pi 0.73 asks no trust');
    // The hook ran once for the session, and its telemetry says what it handed over.
    const starts = hookEvents(s.repo).filter((e) => e.action === 'session-start').slice(before);
    assert.equal(starts.length, 1, JSON.stringify(starts));
    assert.ok(starts[0].metadata.output_chars >= briefing.length, JSON.stringify(starts[0]));
  } finally {
    await s.done();
  }
});

test('a --global install briefs pi in any folder, and its uninstall leaves pi\'s folder as it was', async () => {
  const s = await setup();
  try {
    const before = snapshot(s.agentDir);
    await cairn(['--repo', s.repo, 'hooks', 'install', '--agent', 'pi', '--global'], { env: s.env, cwd: s.dir });
    assert.ok(fs.existsSync(path.join(s.agentDir, 'extensions', 'cairn.ts')));
    const elsewhere = path.join(s.dir, 'scratch');
    fs.mkdirSync(elsewhere);
    const r = await runPi({ home: s.home, cwd: elsewhere, prompts: ['hello'] });
    assert.equal(r.code, 0, r.stderr);
    const briefing = await briefingFor(s, elsewhere);
    assert.ok(briefing.length > 0);
    assert.equal(occurrences(systemPrompt(turns(s.mock.requests)[0]), briefing), 1);
    await cairn(['--repo', s.repo, 'hooks', 'uninstall', '--agent', 'pi', '--global'], { env: s.env, cwd: s.dir });
    const after = snapshot(s.agentDir);
    // What pi itself wrote meanwhile: its sessions, and an empty auth.json.
    for (const f of Object.keys(after)) if (f.startsWith('sessions') || f === 'auth.json') delete after[f];
    assert.deepEqual(after, before);
  } finally {
    await s.done();
  }
});

test('with no cairn on PATH pi is briefed all the same, and a cairn gone is said on stderr', async () => {
  const s = await setup();
  try {
    // Install runs as a copy of cairn, so the extension names the copy's absolute path.
    const copy = path.join(s.dir, 'bin-copy', 'cairn');
    fs.mkdirSync(path.dirname(copy), { recursive: true });
    fs.copyFileSync(cairnBin, copy);
    fs.chmodSync(copy, 0o755);
    const install = await run(copy, ['--repo', s.repo, 'hooks', 'install', '--agent', 'pi'], { env: s.env, cwd: s.project });
    assert.equal(install.code, 0, install.stderr);
    assert.match(fs.readFileSync(path.join(s.project, '.pi/extensions/cairn.ts'), 'utf8'), new RegExp(`const CAIRN = "${copy}";`));
    const env = { ...piEnv(s.home), PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin` };
    const r = await run(piBin, ['-p', '--offline', 'hello'], { env, cwd: s.project, timeoutMs: 90_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'Noted.');
    const briefing = await briefingFor(s, s.project);
    assert.ok(briefing.length > 0);
    assert.equal(occurrences(systemPrompt(turns(s.mock.requests)[0]), briefing), 1, 'briefed with no cairn on PATH');
    fs.rmSync(copy);
    const gone = await run(piBin, ['-p', '--offline', 'hello'], { env, cwd: s.project, timeoutMs: 90_000 });
    assert.equal(gone.code, 0, gone.stderr);
    assert.equal(gone.stdout.trim(), 'Noted.');
    assert.match(gone.stderr, /cairn: session-start: cannot run cairn: .*ENOENT/, gone.stderr);
    assert.match(gone.stderr, /cairn: session-end: cannot run cairn/, gone.stderr);
  } finally {
    await s.done();
  }
});

/** `count` MEMORY.md entries under the curated sections, about `chars` characters in all. */
function bigMemory(count, chars) {
  const sections = ['Preferences', 'Rules and conventions', 'System architecture', 'Operations'];
  const each = Math.floor(chars / count) - 16;
  const entries = [];
  for (let i = 0; i < count; i += 1) {
    const head = `Entry ${String(i + 1).padStart(3, '0')}: the billing service keeps rule ${i + 1}`;
    entries.push(`- (2026-11-${String((i % 28) + 1).padStart(2, '0')}) ${(head + ' and its reasons, written down so that every agent session starts knowing them well').slice(0, each)}`);
  }
  let text = '# Memory\n';
  sections.forEach((section, n) => {
    const part = entries.filter((_, i) => i % sections.length === n);
    text += `\n## ${section}\n\n${part.join('\n')}\n`;
  });
  return { text, entries };
}

test('a MEMORY.md of 97 entries (11,800 characters) that memory lint accepts reaches the model whole', async () => {
  const s = await setup();
  try {
    const memory = bigMemory(97, 11_800);
    fs.writeFileSync(path.join(s.repo, 'MEMORY.md'), memory.text);
    assert.ok(memory.text.length > 11_000 && memory.text.length < 12_000, `${memory.text.length}`);
    await cairn(['--repo', s.repo, 'memory', 'lint'], { env: s.env });
    await cairn(['--repo', s.repo, 'hooks', 'install', '--agent', 'pi'], { env: s.env, cwd: s.project });
    const r = await runPi({ home: s.home, cwd: s.project, prompts: ['What do you know?'] });
    assert.equal(r.code, 0, r.stderr);
    const [request] = turns(s.mock.requests);
    const prompt = systemPrompt(request);
    const missing = memory.entries.filter((e) => occurrences(prompt, e.slice(2)) !== 1);
    assert.deepEqual(missing, [], `${missing.length} of 97 entries not in the system prompt once`);
  } finally {
    await s.done();
  }
});

/** The records cairn stored for pi's sessions (vault/sessions/pi/*.jsonl). */
function stored(repo) {
  const dir = path.join(repo, 'vault', 'sessions', 'pi');
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8')
    .split('\n').filter(Boolean).map((l) => JSON.parse(l)));
}

/** cairn's telemetry events of the hooks. */
function hookEvents(repo) {
  const file = path.join(repo, '.cairn', 'telemetry.jsonl');
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
    .filter((e) => e.component === 'hooks');
}

test('the session file pi wrote is ingested as cards when pi ends', async () => {
  const s = await setup({ mock: { reply: () => 'Billing deploys blue-green, switching at 02:00 UTC.' } });
  try {
    await cairn(['--repo', s.repo, 'hooks', 'install', '--agent', 'pi'], { env: s.env, cwd: s.project });
    const r = await runPi({ home: s.home, cwd: s.project, prompts: ['How does the billing service deploy?'] });
    assert.equal(r.code, 0, r.stderr);
    const [file] = sessionFiles(s.sessions);
    assert.ok(file, 'pi wrote a session file');
    const id = JSON.parse(fs.readFileSync(file, 'utf8').split('\n')[0]).id;
    const cards = await until(() => {
      const found = stored(s.repo).filter((c) => c.type === 'card' && c.session === id);
      return found.length > 0 && found;
    });
    assert.ok(cards, `no card of session ${id} within 60 s; telemetry: ${JSON.stringify(hookEvents(s.repo))}`);
    assert.equal(cards.length, 1);
    assert.equal(cards[0].prompt, 'How does the billing service deploy?');
    assert.equal(cards[0].answer, 'Billing deploys blue-green, switching at 02:00 UTC.');
    const end = hookEvents(s.repo).find((e) => e.action === 'session-end');
    assert.equal(end?.success, true, JSON.stringify(end));
  } finally {
    await s.done();
  }
});

test('a continued session (pi -c) is briefed again and adds its turn without touching the first card', async () => {
  const s = await setup({ mock: { reply: (body) => `Answer ${body.messages.filter((m) => m.role === 'user').length}.` } });
  try {
    await cairn(['--repo', s.repo, 'hooks', 'install', '--agent', 'pi'], { env: s.env, cwd: s.project });
    const first = await runPi({ home: s.home, cwd: s.project, prompts: ['First question?'] });
    assert.equal(first.code, 0, first.stderr);
    const cardsOf = () => stored(s.repo).filter((c) => c.type === 'card');
    const one = await until(() => cardsOf().length === 1 && cardsOf());
    assert.ok(one, 'the first run was ingested');
    const second = await runPi({ home: s.home, cwd: s.project, prompts: ['Second question?'], args: ['-c'] });
    assert.equal(second.code, 0, second.stderr);
    assert.equal(sessionFiles(s.sessions).length, 1, 'pi went on in the same session file');
    const two = await until(() => cardsOf().length === 2 && cardsOf());
    assert.ok(two, `the continued run was ingested: ${JSON.stringify(cardsOf())}`);
    assert.deepEqual(two[0], one[0], 'the first card is as it was');
    assert.equal(two[1].prompt, 'Second question?');
    assert.equal(two[1].answer, 'Answer 2.');
    const briefing = await briefingFor(s, s.project);
    for (const request of turns(s.mock.requests)) assert.equal(occurrences(systemPrompt(request), briefing), 1);
  } finally {
    await s.done();
  }
});

test('a compaction runs the pre-compact hook, which stores the episode', async () => {
  // pi compacts when a turn's context passes contextWindow - reserveTokens: the mock reports
  // 3,500 prompt tokens for the first turn of a 4,000-token model, so pi compacts before it
  // sends the second prompt (and never after the last, which would race its exit).
  let turnsSeen = 0;
  const s = await setup({
    mock: {
      // A summary takes a model a while: 3 s, in which an ingest started before the
      // compaction (pi's session_before_compact) would read a file without the compaction.
      reply: async (body) => {
        if (!JSON.stringify(body).includes('context summarization assistant')) return 'Billing deploys blue-green.';
        await new Promise((ok) => setTimeout(ok, 3_000));
        return 'Summary: the person asked how billing deploys; blue-green.';
      },
      promptTokens: (body) => (JSON.stringify(body).includes('context summarization assistant') || turnsSeen++ > 0 ? 100 : 3_500),
    },
    home: { contextWindow: 4_000, settings: { compaction: { enabled: true, reserveTokens: 1_000, keepRecentTokens: 10 } } },
  });
  try {
    await cairn(['--repo', s.repo, 'hooks', 'install', '--agent', 'pi'], { env: s.env, cwd: s.project });
    const r = await runPi({ home: s.home, cwd: s.project, prompts: ['How does billing deploy?', 'Thanks.'] });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /error/i, r.stderr);
    const [file] = sessionFiles(s.sessions);
    const compactions = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
      .filter((e) => e.type === 'compaction');
    assert.equal(compactions.length, 1, 'pi compacted once');
    const ingested = await until(() => hookEvents(s.repo).find((e) => e.action === 'pre-compact-ingest'));
    assert.ok(ingested, `no pre-compact ingest; telemetry: ${JSON.stringify(hookEvents(s.repo))}`);
    assert.equal(ingested.success, true, JSON.stringify(ingested));
    // The compaction's own ingest stored its episode (not only the one at session end).
    assert.equal(ingested.metadata.episodes, 1, JSON.stringify(ingested));
    const hook = hookEvents(s.repo).find((e) => e.action === 'pre-compact');
    assert.equal(hook.metadata.session, compactions.length && JSON.parse(fs.readFileSync(file, 'utf8').split('\n')[0]).id);
    const episodes = await until(() => {
      const found = stored(s.repo).filter((e) => e.type === 'episode' && e.kind === 'compaction');
      return found.length > 0 && found;
    });
    assert.ok(episodes, 'no compaction episode stored');
    assert.equal(episodes.length, 1);
    assert.equal(episodes[0].text, compactions[0].summary);
  } finally {
    await s.done();
  }
});

test('uninstall removes exactly the extension install wrote; the person\'s files keep their bytes', async () => {
  const s = await setup();
  try {
    const ext = path.join(s.project, '.pi', 'extensions');
    fs.mkdirSync(ext, { recursive: true });
    const mine = 'export default function (pi) { pi.on("agent_start", async () => {}); }\n';
    fs.writeFileSync(path.join(ext, 'mine.ts'), mine);
    const settings = '{\n  "theme": "dark"\n}\n';
    fs.writeFileSync(path.join(s.project, '.pi', 'settings.json'), settings);
    const before = snapshot(s.project);
    await cairn(['--repo', s.repo, 'hooks', 'install', '--agent', 'pi'], { env: s.env, cwd: s.project });
    const during = snapshot(s.project);
    assert.deepEqual(Object.keys(during).filter((f) => !(f in before)), ['.pi/extensions/cairn.ts']);
    const r = await runPi({ home: s.home, cwd: s.project, prompts: ['hello'] });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(turns(s.mock.requests).length, 1);
    await cairn(['--repo', s.repo, 'hooks', 'uninstall', '--agent', 'pi'], { env: s.env, cwd: s.project });
    assert.deepEqual(snapshot(s.project), before);

    // In a project that had no .pi/ at all, uninstall leaves no empty folder behind either.
    const fresh = path.join(s.dir, 'fresh');
    fs.mkdirSync(fresh);
    await run('git', ['init', '-q', fresh], { env: s.env });
    const bare = snapshot(fresh);
    await cairn(['--repo', s.repo, 'hooks', 'install', '--agent', 'pi'], { env: s.env, cwd: fresh });
    assert.ok(fs.existsSync(path.join(fresh, '.pi', 'extensions', 'cairn.ts')));
    await cairn(['--repo', s.repo, 'hooks', 'uninstall', '--agent', 'pi'], { env: s.env, cwd: fresh });
    assert.deepEqual(snapshot(fresh), bare);
  } finally {
    await s.done();
  }
});

/** Every file under `dir` (but .git/) with its bytes, and every folder, by relative path. */
function snapshot(dir) {
  const out = {};
  for (const f of fs.readdirSync(dir, { recursive: true })) {
    if (f === '.git' || f.startsWith(`.git${path.sep}`)) continue;
    const full = path.join(dir, f);
    out[f] = fs.statSync(full).isDirectory() ? 'folder' : fs.readFileSync(full).toString('base64');
  }
  return out;
}

test('pi has no MCP client, as the README says', () => {
  const dist = path.join(root, 'tests/agents/node_modules/@mariozechner/pi-coding-agent/dist');
  const hits = [];
  for (const f of fs.readdirSync(dist, { recursive: true })) {
    if (!f.endsWith('.js')) continue;
    const text = fs.readFileSync(path.join(dist, f), 'utf8');
    if (/modelcontextprotocol|mcpServers|\bMCP\b/.test(text)) hits.push(f);
  }
  assert.deepEqual(hits, [], 'pi speaks MCP now: update the README\'s note under "## MCP"');
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  assert.match(readme, /pi has no MCP client of its own/);
});

test("the README's pi section runs as written from a project folder", async () => {
  const s = await setup();
  try {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const section = readme.split('\n### pi\n')[1]?.split(/\n#{2,3} /)[0];
    assert.ok(section, 'README has a "### pi" section');
    const block = section.match(/```sh\n([\s\S]*?)```/)?.[1];
    assert.ok(block, 'the section has a sh block');
    const lines = block.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l && !l.startsWith('#'));
    assert.ok(lines.some((l) => l.startsWith('cairn hooks install --agent pi')), lines.join('\n'));
    assert.ok(lines.some((l) => l.startsWith('pi ')), lines.join('\n'));
    // A person's PATH: cairn, and pi where npm put it.
    const env = { ...s.env, PATH: `${path.dirname(piBin)}:${s.env.PATH}`, CAIRN_REPO: s.repo };
    for (const line of lines) {
      const r = await run('sh', ['-c', line], { env, cwd: s.project, timeoutMs: 90_000 });
      assert.equal(r.code, 0, `${line}\n${r.stdout}\n${r.stderr}`);
    }
    assert.ok(turns(s.mock.requests).length >= 1, 'pi asked the model');
    const briefing = await briefingFor(s, s.project);
    for (const request of turns(s.mock.requests)) assert.equal(occurrences(systemPrompt(request), briefing), 1);
  } finally {
    await s.done();
  }
});

test('timeToFirstRequest measures pi with and without the extension', async () => {
  const t = tempDir('cairn-pi-bench-');
  try {
    const repo = path.join(t.dir, 'kb');
    await cairn(['init', repo], { env: piEnv(path.join(t.dir, 'home'), cairnBin), cwd: t.dir });
    const bare = await timeToFirstRequest({ repo, hooks: false, cairnBin });
    const hooked = await timeToFirstRequest({ repo, hooks: true, cairnBin });
    assert.ok(bare > 0 && hooked > 0, `${bare} ${hooked}`);
    console.log(`pi: first request after ${bare} ms without cairn's extension, ${hooked} ms with it`);
  } finally {
    t.cleanup();
  }
});
