/**
 * Child process of the crash cases: builds the connector from its spec, opens the shared state
 * store, and publishes a prepared batch with a hook that SIGKILLs this process right after the
 * journal records the chosen step, or around the connector's epoch advance (the one write that
 * decides between roll-back and roll-forward). Usage: node crash-child.js <job.json>
 */
import { readFileSync } from 'node:fs';
import { type Connector, Publisher } from '@ragfresh/core';
import { type CrashJob, describeKillPoint } from './crash-job.js';
import { openSharedStateStore } from './state.js';

const jobPath = process.argv[2];
if (jobPath === undefined) {
  process.stderr.write('usage: crash-child.js <job.json>\n');
  process.exit(2);
}
const job = JSON.parse(readFileSync(jobPath, 'utf8')) as CrashJob;
const mod = (await import(job.spec.module)) as Record<string, unknown>;
const factory = mod[job.spec.exportName];
if (typeof factory !== 'function') {
  process.stderr.write(`${job.spec.module} has no export ${job.spec.exportName}\n`);
  process.exit(3);
}
const connector = (await factory(job.spec.options)) as Connector;
await connector.open({ dimensions: job.dimensions });
const kill = (): void => {
  process.kill(process.pid, 'SIGKILL');
};
const killAt = job.killAt;
if (killAt.kind === 'advance') {
  const advance = connector.advanceEpoch.bind(connector);
  connector.advanceEpoch = async (expected, next, options): Promise<void> => {
    if (killAt.when === 'before') kill();
    if (killAt.when === 'during') {
      const moving = advance(expected, next, options);
      moving.catch(() => undefined);
      for (let turn = 0; turn < killAt.turns; turn++)
        await new Promise((resolve) => setImmediate(resolve));
      kill();
    }
    await advance(expected, next, options);
    if (killAt.when === 'after') kill();
  };
}
const state = await openSharedStateStore(job.statePath);
const publisher = await Publisher.open({
  connector,
  state,
  holder: job.holder,
  graceEpochs: job.graceEpochs,
  hooks: {
    beforeStep(step) {
      if (killAt.kind === 'step' && step === killAt.step) kill();
    },
  },
});
await publisher.publish(job.candidates, { removals: job.removals });
process.stdout.write(`completed without reaching ${describeKillPoint(killAt)}\n`);
process.exit(0);
