// A Claude Code settings file that starts with a UTF-8 byte order mark (issue 31): Claude Code
// reads it, so `cairn hooks install` edits it (keeping the mark) instead of refusing it as
// "not JSON", and the real Claude Code then runs cairn's SessionStart hook: the briefing
// reaches the model. Uninstall gives the file back byte for byte.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startMock, sse, tempDir, run, cairn, cairnBin, bin, sentText } from './lib.mjs';

test('cairn\'s hooks in a settings.json with a byte order mark run in Claude Code', async () => {
  const mock = await startMock((req, res, body) => {
    const message = {
      id: 'msg_1', type: 'message', role: 'assistant', model: body?.model ?? 'claude', content: [],
      stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 },
    };
    if (!body?.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...message, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn' }));
      return;
    }
    sse(res, [
      { event: 'message_start', data: { type: 'message_start', message } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } } },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
  });
  const tmp = tempDir();
  try {
    const home = path.join(tmp.dir, 'home');
    const settings = path.join(home, '.claude/settings.json');
    fs.mkdirSync(path.dirname(settings), { recursive: true });
    const env = {
      HOME: home, PATH: `${path.dirname(cairnBin)}:${process.env.PATH}`,
      ANTHROPIC_BASE_URL: mock.url, ANTHROPIC_API_KEY: 'sk-ant-test',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1',
      GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com',
    };
    const repo = path.join(tmp.dir, 'knowledge');
    await cairn(['init', repo], { env, cwd: tmp.dir });
    await cairn(['--repo', repo, 'memory', 'add', '--section', 'Rules and conventions',
      'Deploys happen only on zebra-striped Tuesdays'], { env, cwd: tmp.dir });
    const original = '\ufeff{\n  "model": "opus"\n}\n';
    fs.writeFileSync(settings, original);
    await cairn(['--repo', repo, 'hooks', 'install', '--agent', 'claude-code', '--global'], { env, cwd: tmp.dir });
    assert.equal(fs.readFileSync(settings, 'utf8').charCodeAt(0), 0xfeff, 'the mark is kept');
    const r = await run(path.join(bin, 'claude'), ['-p', 'hello'], { env, cwd: tmp.dir, timeoutMs: 120_000 });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.ok(sentText(mock.requests).includes('zebra-striped Tuesdays'), 'the briefing reached the model');
    await cairn(['hooks', 'uninstall', '--agent', 'claude-code', '--global'], { env, cwd: tmp.dir });
    assert.equal(fs.readFileSync(settings, 'utf8'), original);
  } finally {
    await mock.close();
    // The SessionEnd hook's background ingest may still be writing in the repository.
    for (let i = 0; i < 50; i += 1) {
      try { tmp.cleanup(); break; } catch { await new Promise((ok) => setTimeout(ok, 200)); }
    }
  }
});
