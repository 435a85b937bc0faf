// What cairn's session hooks cost a real agent: from the agent's start to its first request
// at the mock model server, with and without cairn's hooks installed, on one knowledge
// repository. Each agent's driver (claude.mjs, codex.mjs, pi.mjs: whichever exist) exports
// `timeToFirstRequest({repo, hooks, cairnBin})`, which makes a fresh project and HOME, starts
// the agent headless and resolves the milliseconds until the request arrived.
//
//   node tests/agents/bench.mjs --repo PATH [--runs N] [--agents claude,codex,pi] [--cairn BIN]
//
// Runs alternate (without, with, without, ...) after one warm-up of each, so that load on a
// shared machine falls on both alike. Prints a table of medians and the difference per agent,
// and one JSON line (`{"agents":[...]}`) for a program that reads it.

import fs from 'node:fs';
import path from 'node:path';
import { here, cairnBin as defaultCairn } from './lib.mjs';

function args(argv) {
  const out = { runs: 10, agents: ['claude', 'codex', 'pi'], cairn: defaultCairn };
  for (let i = 0; i < argv.length; i += 1) {
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
      i += 1;
      return argv[i];
    };
    switch (argv[i]) {
      case '--repo': out.repo = path.resolve(next()); break;
      case '--runs': out.runs = Number(next()); break;
      case '--agents': out.agents = next().split(',').filter(Boolean); break;
      case '--cairn': out.cairn = path.resolve(next()); break;
      default: throw new Error(`unknown argument ${argv[i]}`);
    }
  }
  if (!out.repo) throw new Error('--repo PATH is required (a knowledge repository)');
  if (!fs.existsSync(path.join(out.repo, 'cairn.toml'))) throw new Error(`${out.repo} holds no cairn.toml`);
  if (!(out.runs >= 1)) throw new Error('--runs must be 1 or more');
  return out;
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const opts = args(process.argv.slice(2));
  const rows = [];
  for (const agent of opts.agents) {
    const file = path.join(here, `${agent}.mjs`);
    if (!fs.existsSync(file)) {
      console.log(`${agent}: no tests/agents/${agent}.mjs, not measured`);
      continue;
    }
    const mod = await import(file);
    if (typeof mod.timeToFirstRequest !== 'function') {
      console.log(`${agent}: ${agent}.mjs exports no timeToFirstRequest, not measured`);
      continue;
    }
    const measure = (hooks) => mod.timeToFirstRequest({ repo: opts.repo, hooks, cairnBin: opts.cairn });
    await measure(false);
    await measure(true);
    const without = [];
    const withHooks = [];
    for (let k = 0; k < opts.runs; k += 1) {
      without.push(await measure(false));
      withHooks.push(await measure(true));
    }
    const row = { agent, runs: opts.runs, without_ms: median(without), with_ms: median(withHooks) };
    row.difference_ms = row.with_ms - row.without_ms;
    rows.push(row);
    console.log(`${agent}: without ${without.map((x) => x.toFixed(0)).join(' ')} ms; with ${withHooks.map((x) => x.toFixed(0)).join(' ')} ms`);
  }
  console.log('');
  console.log('agent     runs   start to first request: without hooks   with cairn\'s hooks   difference');
  for (const r of rows) {
    console.log(`${r.agent.padEnd(8)}  ${String(r.runs).padStart(4)}   ${r.without_ms.toFixed(0).padStart(30)} ms   ${r.with_ms.toFixed(0).padStart(15)} ms   ${(r.difference_ms >= 0 ? '+' : '') + r.difference_ms.toFixed(0)} ms`);
  }
  console.log(JSON.stringify({ agents: rows }));
}

main().catch((e) => {
  console.error(`bench.mjs: ${e.message}`);
  process.exit(2);
});
