// pi (@mariozechner/pi-coding-agent, pinned in package.json) driven headless against the mock
// model server: what pi.test.mjs and the benchmark (bench.mjs) share.
//
// pi 0.73 reads custom providers from `models.json` in its agent folder (`~/.pi/agent/`, docs/
// models.md); a provider with `"api": "openai-completions"` is spoken to with OpenAI Chat
// Completions, streamed: POST `<baseUrl>/chat/completions` with `stream: true`, the system
// prompt as the first message (role `system`, or `developer` for a reasoning model), answered
// with `chat.completion.chunk` events and `data: [DONE]`. `pi -p --offline` (print mode, no
// start-up network calls: version check, package updates, tool downloads; PI_TELEMETRY=0
// besides) sends each prompt, prints the answer and exits; it writes its session file to
// `~/.pi/agent/sessions/--<cwd>--/` once the model has answered.
// Extensions are loaded from `~/.pi/agent/extensions/` and `.pi/extensions/` of the folder pi
// starts in; they run `cairn` from PATH, so the bin folder of the cairn under test goes first.

import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { bin, cairn, cairnBin as defaultCairnBin, run, sse, startMock, tempDir } from './lib.mjs';

export const piBin = path.join(bin, 'pi');
export const MODEL = 'mock-model';
export const PROVIDER = 'cairnmock';

/**
 * A Chat Completions mock. Every request is answered with `reply(body)` (default: a short
 * text) as one streamed assistant message, with `usage.prompt_tokens` from
 * `promptTokens(body)` (default 100): pi compacts when that passes its threshold.
 */
export async function startPiMock({ reply, promptTokens, onRequest } = {}) {
  return startMock(async (req, res, body) => {
    onRequest?.(Date.now());
    if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no ${req.method} ${req.url} here` } }));
      return;
    }
    const text = reply ? await reply(body) : 'Noted.';
    const id = 'chatcmpl-mock';
    const chunk = (delta, finish = null) => ({
      data: { id, object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [{ index: 0, delta, finish_reason: finish }] },
    });
    const prompt = promptTokens ? promptTokens(body) : 100;
    sse(res, [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: text }),
      chunk({}, 'stop'),
      { data: { id, object: 'chat.completion.chunk', created: 1, model: MODEL, choices: [], usage: { prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 } } },
      { data: '[DONE]' },
    ]);
  });
}

/** The system prompt of one Chat Completions request (its `system` or `developer` message). */
export function systemPrompt(request) {
  const messages = request.body?.messages ?? [];
  const first = messages.find((m) => m.role === 'system' || m.role === 'developer');
  if (!first) return '';
  return typeof first.content === 'string'
    ? first.content
    : first.content.map((p) => p.text ?? '').join('');
}

/** The model's requests that are turns of the conversation (not compaction summaries). */
export function turns(requests) {
  return requests.filter((r) => !systemPrompt(r).includes('context summarization assistant'));
}

/** How many times `needle` occurs in `haystack`. */
export function occurrences(haystack, needle) {
  if (!needle) return 0;
  let n = 0;
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + 1)) n += 1;
  return n;
}

/**
 * A throwaway HOME whose pi agent folder has the mock as its one provider and model (the
 * default, so a plain `pi -p` uses it) and `settings` merged into settings.json.
 */
export function piHome(dir, mockUrl, { contextWindow = 128000, settings = {} } = {}) {
  const home = path.join(dir, 'home');
  const agentDir = path.join(home, '.pi', 'agent');
  fs.mkdirSync(agentDir, { recursive: true });
  const models = {
    providers: {
      [PROVIDER]: {
        baseUrl: `${mockUrl}/v1`,
        api: 'openai-completions',
        apiKey: 'not-a-real-key',
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: MODEL, name: 'cairn mock', reasoning: false, contextWindow, maxTokens: 1000 }],
      },
    },
  };
  fs.writeFileSync(path.join(agentDir, 'models.json'), JSON.stringify(models, null, 2));
  fs.writeFileSync(
    path.join(agentDir, 'settings.json'),
    JSON.stringify({ defaultProvider: PROVIDER, defaultModel: MODEL, ...settings }, null, 2),
  );
  return { home, agentDir, sessions: path.join(agentDir, 'sessions') };
}

/** The environment pi runs in: the throwaway HOME, and the cairn under test first on PATH. */
export function piEnv(home, cairnBin = defaultCairnBin) {
  return {
    HOME: home,
    PATH: `${path.dirname(cairnBin)}:${process.env.PATH}`,
    PI_OFFLINE: '1',
    PI_TELEMETRY: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: path.join(home, '.gitconfig'),
  };
}

/** `pi -p --offline PROMPTS…` in `cwd`. */
export function runPi({ home, cwd, prompts, args = [], cairnBin, timeoutMs = 90_000 }) {
  return run(piBin, ['-p', '--offline', ...args, ...prompts], { env: piEnv(home, cairnBin), cwd, timeoutMs });
}

/** Every session file pi wrote under `sessions`. */
export function sessionFiles(sessions) {
  if (!fs.existsSync(sessions)) return [];
  return fs.readdirSync(sessions, { recursive: true })
    .map((f) => path.join(sessions, f))
    .filter((f) => f.endsWith('.jsonl'));
}

/** A knowledge repository made by `cairn init`, and a project (a git repository) beside it. */
export async function repoAndProject(dir, home, cairnBin = defaultCairnBin) {
  const repo = path.join(dir, 'kb');
  const project = path.join(dir, 'project');
  const env = piEnv(home, cairnBin);
  await cairn(['init', repo], { env, cwd: dir });
  fs.mkdirSync(project);
  await run('git', ['init', '-q', project], { env });
  fs.writeFileSync(path.join(project, 'README.md'), '# billing\n');
  return { repo, project, env };
}

/** Polls `check()` every 250 ms until it returns a truthy value or `ms` pass. */
export async function until(check, ms = 60_000) {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value || Date.now() > end) return value;
    await new Promise((ok) => setTimeout(ok, 250));
  }
}

/**
 * Milliseconds from starting `pi -p` in a project of `repo` to the first request at the mock
 * server, with cairn's extension installed in the project (`hooks: true`) or not. `repo` is a
 * knowledge repository; the project and pi's HOME are made for the measure and removed after.
 */
export async function timeToFirstRequest({ repo, hooks, cairnBin = defaultCairnBin }) {
  const t = tempDir('cairn-pi-ttfr-');
  let mock;
  try {
    let firstAt = null;
    let arrived;
    const first = new Promise((ok) => { arrived = ok; });
    mock = await startPiMock({ onRequest: (at) => { if (firstAt === null) { firstAt = at; arrived(at); } } });
    const { home } = piHome(t.dir, mock.url);
    const project = path.join(t.dir, 'project');
    fs.mkdirSync(project);
    await run('git', ['init', '-q', project], { env: piEnv(home, cairnBin) });
    if (hooks) {
      await cairn(['--repo', repo, 'hooks', 'install', '--agent', 'pi'], { env: piEnv(home, cairnBin), cwd: project });
    }
    const started = Date.now();
    const child = spawn(piBin, ['-p', '--offline', 'hello'], { cwd: project, env: piEnv(home, cairnBin), stdio: 'ignore' });
    const exited = new Promise((ok) => child.on('close', ok));
    const at = await Promise.race([first, exited.then(() => null), new Promise((ok) => setTimeout(() => ok(null), 120_000))]);
    child.kill('SIGKILL');
    await exited;
    if (at === null) throw new Error('pi sent no request to the mock server');
    return at - started;
  } finally {
    await mock?.close();
    t.cleanup();
  }
}
