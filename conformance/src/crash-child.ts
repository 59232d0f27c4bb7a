/**
 * Child process of the crash cases: builds the connector from its spec, opens the shared state
 * store, and publishes a prepared batch with a hook that SIGKILLs this process right after the
 * journal records the chosen step. Usage: node crash-child.js <job.json>
 */
import { readFileSync } from 'node:fs';
import {
  type Connector,
  type ConnectorSpec,
  type JournalStep,
  type PublishCandidate,
  Publisher,
  type RemovalRequest,
} from '@ragfresh/core';
import { openSharedStateStore } from './state.js';

export interface CrashJob {
  readonly spec: ConnectorSpec;
  readonly dimensions: number;
  readonly statePath: string;
  readonly holder: string;
  readonly step: JournalStep;
  readonly graceEpochs: number;
  readonly candidates: readonly PublishCandidate[];
  readonly removals: readonly RemovalRequest[];
}

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
const state = await openSharedStateStore(job.statePath);
const publisher = await Publisher.open({
  connector,
  state,
  holder: job.holder,
  graceEpochs: job.graceEpochs,
  hooks: {
    beforeStep(step) {
      if (step === job.step) process.kill(process.pid, 'SIGKILL');
    },
  },
});
await publisher.publish(job.candidates, { removals: job.removals });
process.stdout.write(`completed without reaching step ${job.step}\n`);
process.exit(0);
