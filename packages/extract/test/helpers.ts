import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function fixture(name: string): string {
  return readFileSync(fileURLToPath(new URL(`./fixtures/html/${name}`, import.meta.url)), 'utf8');
}

export function fixtureBytes(name: string): Uint8Array {
  return readFileSync(fileURLToPath(new URL(`./fixtures/html/${name}`, import.meta.url)));
}

/** Lines of the fenced block that starts with the given fence line. */
export function fencedBlock(markdown: string, open: string): string[] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(open);
  if (start < 0) return [];
  const end = lines.indexOf('```', start + 1);
  return lines.slice(start + 1, end);
}
