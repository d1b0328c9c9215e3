// test-needs: kafka
/**
 * A release that changes a skill's prompt, on the ReAct loop (TAO_PLANNER=react, the scripted model
 * SIMULATOR, the three stages as processes): once a rollout sends every new run to it, a run's model
 * turns are asked with the candidate's SKILL.md, its outcome names the candidate, and `replay
 * --verify` of it, after a rollback, re-decides it with that release and finds no drift.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildTask } from '../../client/tasks.ts';
import { startModelSim, type ModelSim } from '../../model-sim/server.ts';
import { replayCommand } from '../../replay/cli.ts';
import { packagePath } from '../../runtime/paths.ts';
import type { ThoughtRequest } from '../../schemas/types.gen.ts';
import { runTasks, scanToEnd, startLoop, type RunningLoop } from '../helpers/cluster.ts';
import { runCli } from '../replay/helpers.ts';
import { tao as taoCommand } from '../../bench/lib/chaos-rollouts.ts';

let sim: ModelSim;
let loop: RunningLoop;
const LINE = 'Candidate release: greet the customer by the word Ahoy.';

const tao = (command: 'manifest' | 'rollout', args: string[]) => taoCommand(command, args, loop.cluster.env);

before(async () => {
  sim = await startModelSim({ port: 0 });
  loop = await startLoop({ TAO_PLANNER: 'react', TAO_LLM_BASE_URL: `${sim.url}/v1`, TAO_LLM_MODEL: 'sim-1', TAO_LLM_TIMEOUT_MS: '5000' });
});

after(async () => {
  await loop?.stop();
  await sim?.close();
});

test(
  "a candidate's changed skill prompt is what its runs' model turns are asked with; verify after the rollback finds no drift",
  { timeout: 300000 },
  async () => {
    const active = await tao('manifest', ['publish', '--activate']);
    const folder = mkdtempSync(join(tmpdir(), 'tao-react-candidate-'));
    cpSync(packagePath('skills'), join(folder, 'skills'), { recursive: true });
    const skill = join(folder, 'skills', 'order-status', 'SKILL.md');
    writeFileSync(skill, `${readFileSync(skill, 'utf8')}\n${LINE}\n`);
    const candidate = await tao('manifest', ['publish', '--folder', folder]);
    await tao('rollout', ['start', candidate, '--percent', '100']);
    await loop.fleet.waitForLine('rollout start 100%', 30000);

    const task = buildTask({ text: 'Where is my order O-12345678? It was a birthday present.', source: 'test', external_id: `${loop.cluster.namespace}-1` });
    const outcome = (await runTasks(loop.cluster, [task], 150000)).get(task.thought_id)!;
    assert.equal(outcome.status, 'completed', outcome.reason);
    assert.equal(outcome.manifest, candidate);
    const waves = (await scanToEnd(loop.cluster, ['thoughtRequests']))
      .filter((r) => r.key === task.thought_id)
      .map((r) => r.value as unknown as ThoughtRequest);
    assert.ok(waves.length >= 3);
    assert.ok(
      waves.some((w) => w.steps.some((s) => s.input_json.includes(LINE))),
      "the model was asked with the candidate's SKILL.md",
    );

    await tao('rollout', ['rollback']);
    const verified = await runCli(replayCommand, [task.thought_id, '--verify', '--format', 'json'], loop.cluster.env);
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    assert.equal((JSON.parse(verified.stdout) as { drift: boolean }).drift, false);
    assert.notEqual(active, candidate);
  },
);
