// Writes ragfresh.config.schema.json (the JSON Schema of a JSON config, for editors) from the
// built config schema: `tsc -b packages/cli && node packages/cli/schema/generate.mjs`.
// packages/cli/test/config-schema.test.ts fails when the file is out of date.
import { writeFileSync } from 'node:fs';
import { configJsonSchema } from '../dist/config-schema.js';

writeFileSync(
  new URL('./ragfresh.config.schema.json', import.meta.url),
  `${JSON.stringify(configJsonSchema(), null, 2)}\n`,
);
