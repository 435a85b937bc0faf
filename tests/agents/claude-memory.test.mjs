// Claude Code's own auto memory, for real (issue 35, ADRs 135-136): the real Claude Code
// 2.1.332 run headless against the mock, its memory folder moved by `autoMemoryDirectory` in
// the user's settings; the mock answers as a model saving a memory would (a Write tool call of
// a topic file into that folder); cairn's `sessions ingest --all` finds the file there and
// stores it, and recall finds it. Run: CAIRN_BIN=$PWD/target/debug/cairn node --test
// tests/agents/claude-memory.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './lib.mjs';
import {
  anthropicMock, cairn, claude, makeProject, makeKnowledgeRepo, messageRequests, settled, strings,
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
