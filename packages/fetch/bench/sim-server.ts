/**
 * Child process of the fetch benchmark: serves the simulated web so its CPU is not counted
 * against the fetcher. Sends `{ urls }` to the parent over IPC, then serves until told to stop.
 */
import { startSimWeb } from '@ragfresh/sim';

const hosts = Number(process.env.BENCH_HOSTS ?? 50);
const pages = Number(process.env.BENCH_PAGES ?? 200);
const sim = await startSimWeb({
  seed: 1,
  hosts,
  pagesPerHost: pages,
  cacheSize: hosts * pages,
  logLimit: 1000,
});
process.send?.({ urls: sim.urls() });
process.on('message', (msg: unknown) => {
  if (msg === 'stop') void sim.stop().then(() => process.exit(0));
});
