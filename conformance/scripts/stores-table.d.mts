// Types of stores-table.mjs for the tests that import it.
import type { ConformanceReport } from '../src/types.ts';

export function table(reports: readonly ConformanceReport[]): string;
export function loadReports(dir?: string): ConformanceReport[];
export function rewrite(readme: string, block: string): string;
