// cairn with the real pi (0.73.1), run headless (`pi -p --offline`) against the Chat Completions
// mock: what the model received, what cairn stored, what uninstall gave back. See pi.mjs for how
// pi is driven.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cairn, cairnBin, root, run, tempDir } from './lib.mjs';
import {
  occurrences, piEnv, piHome, repoAndProject, runPi, sessionFiles, startPiMock, systemPrompt,
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
    done: async () => { await mock.close(); t.cleanup(); },
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
    assert.doesNotMatch(install.stdout + install.stderr, /trust/, 'pi 0.73 asks no trust');
    const briefing = await briefingFor(s, s.project);
    assert.match(briefing, /Run cargo fmt before every commit/);

    const r = await runPi({ home: s.home, cwd: s.project, prompts: ['What are the rules here?', 'And the second question?'] });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /cairn:/, r.stderr);
    const sent = turns(s.mock.requests);
    assert.equal(sent.length, 2, 'one request a prompt');
    for (const request of sent) {
      assert.equal(occurrences(systemPrompt(request), briefing), 1, systemPrompt(request));
      assert.ok(systemPrompt(request).startsWith('You are'), "pi's own prompt comes first");
    }
  } finally {
    await s.done();
  }
});
