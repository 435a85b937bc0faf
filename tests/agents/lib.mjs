// What every real-agent test shares: a local mock model server that logs every request, a
// throwaway HOME, and running a program with a deadline. Each agent's own protocol (Anthropic
// Messages, OpenAI Responses, Chat Completions) and scenarios live in its `<agent>.test.mjs`.
// Nothing here touches the network: the server listens on 127.0.0.1, and every agent is
// pointed at it.

import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, '../..');
export const bin = path.join(here, 'node_modules/.bin');

/** The cairn binary under test (tests/cli/agents.rs passes CARGO_BIN_EXE_cairn). */
export const cairnBin = process.env.CAIRN_BIN || path.join(root, 'target/debug/cairn');

/**
 * Starts a mock model server. `handle(req, res, body)` answers one request; `body` is the
 * parsed JSON (or the raw text). Every request is kept in `requests` as
 * `{method, path, headers, body, text}`, in arrival order, with `at` (ms since start).
 */
export async function startMock(handle) {
  const requests = [];
  const started = Date.now();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body = text;
      try { body = text ? JSON.parse(text) : null; } catch { /* keep the text */ }
      const entry = { method: req.method, path: req.url, headers: req.headers, body, text, at: Date.now() - started };
      requests.push(entry);
      try {
        await handle(req, res, body, entry);
      } catch (e) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(e && e.stack || e) } }));
      }
    });
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    requests,
    close: () => new Promise((ok) => { server.closeAllConnections?.(); server.close(ok); }),
  };
}

/** Writes Server-Sent Events: each item `{event?, data}`; data objects are JSON-encoded. */
export function sse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of events) {
    if (e.event) res.write(`event: ${e.event}\n`);
    res.write(`data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`);
  }
  res.end();
}

/**
 * A fresh temporary folder under the OS temp dir, removed by `cleanup()`: retried a few times,
 * since a hook's background cairn (the session-end ingest) may still be writing in it.
 */
export function tempDir(prefix = 'cairn-agent-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const cleanup = () =>
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  return { dir, cleanup };
}

/**
 * Runs `cmd args` with `opts.env` (added to a minimal environment: PATH, and HOME set by the
 * caller), `opts.cwd`, `opts.input` (stdin text), killed after `opts.timeoutMs` (default 120 s).
 * Resolves `{code, signal, stdout, stderr, ms}`; never rejects.
 */
export function run(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: { PATH: process.env.PATH, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('error', (e) => { stderr += String(e); });
    // A child that exits before reading its stdin (git log, say) must not fail the run.
    child.stdin.on('error', () => {});
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** Runs the cairn under test (or `bin`); throws with its output unless it exits `expect` (default 0). */
export async function cairn(args, opts = {}, expect = 0, bin = cairnBin) {
  const r = await run(bin, args, opts);
  if (expect !== null && r.code !== expect) {
    throw new Error(`cairn ${args.join(' ')} exited ${r.code}, not ${expect}\n${r.stdout}\n${r.stderr}`);
  }
  return r;
}

/** Every request body's text, joined: what the model was sent, to search for the briefing. */
export function sentText(requests) {
  return requests.map((r) => r.text).join('\n');
}
