// Claude Code's own auto memory, for real (issue 35, ADRs 135-136): the real Claude Code
// 2.1.332 run headless against the mock, its memory folder moved by `autoMemoryDirectory` in
// the user's settings; the mock answers as a model saving a memory would (a Write tool call of
// a topic file into that folder); cairn's `sessions ingest --all` finds the file there and
// stores it, and recall finds it. The second test moves the folder into the knowledge
// repository with `cairn hooks install --agent claude-code --memory` (ADR 138): what Claude Code
// writes there is committed by the session-end hook and recalled. Run: CAIRN_BIN=$PWD/target/debug/cairn node --test
// tests/agents/claude-memory.test.mjs

import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './lib.mjs';
import {
  anthropicMock, cairn, claude, makeProject, makeKnowledgeRepo, messageRequests, settled, strings, waitFor,
} from './claude.mjs';

const FACT = 'The billing-api integration tests need the postgres container from docker compose up db';

test('a memory Claude Code writes in the folder autoMemoryDirectory names is read into cairn', async () => {
  const t = tempDir('cairn-claude-memory-');
  const home = path.join(t.dir, 'home');
  fs.mkdirSync(path.join(home, '.claude'), { recursive: true });
  const memory = path.join(t.dir, 'agent-memory');
  fs.mkdirSync(memory);
  fs.writeFileSync(path.join(home, '.claude/settings.json'), `${JSON.stringify({ autoMemoryDirectory: memory }, null, 2)}\n`);
  const kb = await makeKnowledgeRepo(path.join(t.dir, 'kb'));
  const project = await makeProject(path.join(t.dir, 'billing-api'));
  const file = path.join(memory, 'project_integration_tests.md');
  // As a model saves a memory (Claude Code's own instructions): the topic file, then its
  // pointer in MEMORY.md, then the answer.
  const mock = await anthropicMock((body) => {
    const results = (body?.messages ?? []).flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((c) => c.type === 'tool_result').length;
    if (!strings(body?.messages ?? []).some((s) => s.includes('Please remember'))) return { text: 'Done.' };
    if (results === 0) {
      return {
        toolUse: {
          id: 'toolu_memory_1',
          name: 'Write',
          input: {
            file_path: file,
            content: `---\nname: integration-tests\ndescription: what the integration tests need\ntype: project\n---\n\n${FACT}.\n`,
          },
        },
      };
    }
    if (results === 1) {
      return {
        toolUse: {
          id: 'toolu_memory_2',
          name: 'Write',
          input: {
            file_path: path.join(memory, 'MEMORY.md'),
            content: '- [Integration tests](project_integration_tests.md) — need the postgres container\n',
          },
        },
      };
    }
    return { text: 'Saved that to memory.' };
  });
  const env = { HOME: home };
  try {
    const r = await claude(['-p', 'Please remember: the integration tests need the postgres container.'], { home, cwd: project, url: mock.url });
    assert.equal(r.code, 0, `claude exited ${r.code}\n${r.stdout}\n${r.stderr}`);
    const sent = messageRequests(mock.requests);
    assert.ok(sent.some((q) => strings(q.body).some((s) => s.includes(memory))),
      'Claude Code told the model its memory folder is the one autoMemoryDirectory names');
    assert.ok(fs.existsSync(file), `Claude Code wrote no ${file}: ${JSON.stringify(sent.at(-1)?.body?.messages?.at(-1))}`);
    const ingest = await cairn(['--repo', kb, '--json', 'sessions', 'ingest', '--all', '--agent', 'claude'], { cwd: project, env });
    const memories = JSON.parse(ingest.stdout).data.memories;
    assert.equal(memories.stored, 1, JSON.stringify(memories));
    const recall = await cairn(['--repo', kb, '--json', 'recall', 'what do the integration tests need?'], { cwd: project, env });
    const results = JSON.parse(recall.stdout).data.results;
    const hit = results.find((x) => (x.text || '').includes('postgres container'));
    assert.ok(hit, `recall: ${recall.stdout}`);
    // The next session's briefing leaves it out: Claude Code loads it from its own MEMORY.md.
    await cairn(['--repo', kb, 'hooks', 'install', '--agent', 'claude-code'], { cwd: project, env });
    const before = mock.requests.length;
    const next = await claude(['-p', 'What do the integration tests need?'], { home, cwd: project, url: mock.url });
    assert.equal(next.code, 0, `claude exited ${next.code}\n${next.stdout}\n${next.stderr}`);
    const later = messageRequests(mock.requests.slice(before));
    const texts = later.flatMap((q) => strings(q.body));
    const briefing = texts.find((x) => x.includes('# Briefing'));
    assert.ok(briefing, 'the session-start hook briefed the model');
    assert.ok(!briefing.includes('postgres container'), `the briefing repeats Claude Code's own memory:\n${briefing}`);
    assert.match(briefing, /Left out: 1 memory Claude Code already loads from its own .*MEMORY\.md/);
    assert.ok(texts.some((x) => x.includes('need the postgres container') && !x.includes('# Briefing')),
      'Claude Code itself loaded its MEMORY.md');
    // Again: nothing new.
    const again = await cairn(['--repo', kb, '--json', 'sessions', 'ingest', '--all', '--agent', 'claude'], { cwd: project, env });
    assert.equal(JSON.parse(again.stdout).data.memories.stored, 0);
  } finally {
    await settled(kb).catch(() => {});
    await mock.close();
    t.cleanup();
  }
});

const DEPLOYS = 'Deploys of billing-api wait one canary hour on the staging cluster before going out';

test('with hooks install --memory, what Claude Code remembers is committed to the knowledge repository at session end', async () => {
  const t = tempDir('cairn-claude-memory-hooks-');
  const home = path.join(t.dir, 'home');
  fs.mkdirSync(path.join(home, '.claude'), { recursive: true });
  const kb = await makeKnowledgeRepo(path.join(t.dir, 'kb'));
  const project = await makeProject(path.join(t.dir, 'billing-api'));
  // What Claude Code kept before, in its default folder: imported by install, left there.
  const old = path.join(home, '.claude/projects', project.replace(/[^A-Za-z0-9]/g, '-'), 'memory');
  fs.mkdirSync(old, { recursive: true });
  fs.writeFileSync(path.join(old, 'project_integration_tests.md'),
    `---\nname: integration-tests\ndescription: what the integration tests need\ntype: project\n---\n\n${FACT}.\n`);
  fs.writeFileSync(path.join(old, 'MEMORY.md'), '- [Integration tests](project_integration_tests.md) — need the postgres container\n');
  const env = { HOME: home };
  const git = (...args) => execFileSync('git', ['-C', kb, ...args], { encoding: 'utf8' });
  const install = await cairn(['--repo', kb, '--json', 'hooks', 'install', '--agent', 'claude-code', '--project', project, '--memory'], { cwd: project, env });
  assert.equal(install.code, 0, install.stdout + install.stderr);
  const folder = JSON.parse(install.stdout).data.memory.folder;
  assert.ok(folder.startsWith(path.join(kb, 'agents/claude-code/')), folder);
  assert.ok(git('ls-files', 'agents').includes('project_integration_tests.md'), 'the old memory is imported and committed');
  assert.ok(fs.existsSync(path.join(old, 'project_integration_tests.md')), 'and left in the default folder');
  const file = path.join(folder, 'project_deploys.md');
  const mock = await anthropicMock((body) => {
    const results = (body?.messages ?? []).flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((c) => c.type === 'tool_result').length;
    if (!strings(body?.messages ?? []).some((s) => s.includes('Please remember'))) return { text: 'Done.' };
    if (results === 0) {
      return { toolUse: { id: 'toolu_memory_1', name: 'Write', input: { file_path: file,
        content: `---\nname: deploys\ndescription: how deploys go out\ntype: project\n---\n\n${DEPLOYS}.\n` } } };
    }
    if (results === 1) {
      return { toolUse: { id: 'toolu_memory_2', name: 'Write', input: { file_path: path.join(folder, 'MEMORY.md'),
        content: '- [Integration tests](project_integration_tests.md) — need the postgres container\n- [Deploys](project_deploys.md) — a canary hour first\n' } } };
    }
    return { text: 'Saved that to memory.' };
  });
  try {
    const r = await claude(['-p', 'Please remember: deploys wait a canary hour.'], { home, cwd: project, url: mock.url });
    assert.equal(r.code, 0, `claude exited ${r.code}\n${r.stdout}\n${r.stderr}`);
    assert.ok(messageRequests(mock.requests).some((q) => strings(q.body).some((s) => s.includes(folder))),
      'Claude Code told the model its memory folder is the one install named');
    assert.ok(fs.existsSync(file), `Claude Code wrote no ${file}`);
    // The session-end hook's background work commits the folder and reads it.
    await waitFor('the memory commit', () => git('ls-files', 'agents').includes('project_deploys.md'));
    await settled(kb);
    assert.equal(git('status', '--porcelain', '--', 'agents'), '');
    const recall = await cairn(['--repo', kb, '--json', 'recall', 'how do deploys of billing-api go out?'], { cwd: project, env });
    assert.ok(recall.stdout.includes(`claude-code-memory:${file}`), `recall: ${recall.stdout}`);
    const before = mock.requests.length;
    const next = await claude(['-p', 'How do deploys go out?'], { home, cwd: project, url: mock.url });
    assert.equal(next.code, 0, `claude exited ${next.code}\n${next.stdout}\n${next.stderr}`);
    const briefing = messageRequests(mock.requests.slice(before)).flatMap((q) => strings(q.body)).find((x) => x.includes('# Briefing'));
    assert.ok(briefing, 'the session-start hook briefed the model');
    assert.ok(!briefing.includes('canary hour'), `the briefing repeats Claude Code's own memory:\n${briefing}`);
    assert.match(briefing, /Left out: 2 memories Claude Code already loads/);
    await settled(kb);
    const local = path.join(project, '.claude/settings.local.json');
    const un = await cairn(['--repo', kb, 'hooks', 'uninstall', '--agent', 'claude-code', '--project', project, '--memory'], { cwd: project, env });
    assert.equal(un.code, 0, un.stdout + un.stderr);
    assert.ok(!fs.existsSync(local), 'the settings file install made is gone');
    assert.ok(fs.existsSync(file), 'the memories stay in the knowledge repository');
  } finally {
    await settled(kb).catch(() => {});
    await mock.close();
    t.cleanup();
  }
});
