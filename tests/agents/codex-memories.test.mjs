// The schema cairn reads Codex's memories by (ADR 135) is the one the real Codex 0.171.0
// ships: each migration of tests/fixtures/agent-memories/codex-memories.sql is in the binary
// word for word (sqlx compiles them in as text), so a Codex whose memories database changed
// fails here before cairn misreads it. Run: node --test tests/agents/codex-memories.test.mjs

import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { here, root } from './lib.mjs';

function codexBinary() {
  const vendor = path.join(here, 'node_modules/@openai/codex-linux-x64/vendor');
  for (const triple of fs.readdirSync(vendor)) {
    const bin = path.join(vendor, triple, 'bin/codex');
    if (fs.existsSync(bin)) return bin;
  }
  throw new Error(`no codex binary under ${vendor}`);
}

test('the memories database migrations cairn reads are the real Codex ones', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(here, 'node_modules/@openai/codex/package.json'), 'utf8'));
  assert.equal(pkg.version, '0.171.0', 'ADR 135 checked 0.171.0: check the new version and update it');
  const sql = fs.readFileSync(path.join(root, 'tests/fixtures/agent-memories/codex-memories.sql'), 'utf8');
  const migrations = sql.split(/^-- migration \d+\n/m).slice(1);
  assert.equal(migrations.length, 2);
  const binary = fs.readFileSync(codexBinary());
  for (const m of migrations) {
    assert.ok(binary.indexOf(Buffer.from(m, 'utf8')) >= 0, `not in the real Codex:\n${m}`);
  }
  // The columns cairn reads, as the running Codex writes them.
  for (const query of ['INSERT INTO stage1_outputs (\n    thread_id,\n    source_updated_at,\n    raw_memory,\n    rollout_summary,\n    rollout_slug,\n    generated_at\n)']) {
    assert.ok(binary.indexOf(Buffer.from(query, 'utf8')) >= 0, `Codex no longer writes: ${query}`);
  }
  assert.ok(binary.indexOf(Buffer.from('memories_1.sqlite')) >= 0, 'the database keeps its name');
});
