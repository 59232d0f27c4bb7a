// The pgvector test target (PGlite served over the wire) in a process of its own. PGlite runs
// each query on its process' event loop: inside the test process it held up the simulated
// web's answers while a batch was staged or verified, and the politeness gate (one request
// per host at a time) turned every such delay into idle workers. Runs built code (Node strips
// the types). Prints one JSON line `{ event: 'ready', connector }`; SIGTERM stops the server.
import { fixture } from '@ragfresh/connector-pgvector/fixture';

const namespace = process.argv[2];
if (namespace === undefined) {
  process.stderr.write('usage: store-process.ts <namespace>\n');
  process.exit(2);
}
const target = await fixture.start();
process.once('SIGTERM', () => {
  void target.stop().finally(() => process.exit(0));
});
process.stdout.write(
  `${JSON.stringify({ event: 'ready', connector: target.connectorSpec!(namespace) })}\n`,
);
