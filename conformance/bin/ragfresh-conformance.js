#!/usr/bin/env node
// A file that exists before the first build, so `pnpm install` on a fresh clone can link the
// command (a bin pointing into dist/ is skipped with a warning, and never linked afterwards).
import '../dist/cli.js';
