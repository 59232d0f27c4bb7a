import { RagfreshError } from '@ragfresh/core';

/** One record of an export, with its position in the input. */
export interface ExportRecord {
  readonly line: number;
  readonly value: unknown;
}

/** A JSON array, JSON lines, or one JSON object (a vendor's response envelope). */
export function parseJsonRecords(text: string): { records: ExportRecord[]; envelope?: object } {
  const trimmed = text.replace(/^\uFEFF/, '').trim();
  if (trimmed === '') return { records: [] };
  if (trimmed.startsWith('[')) {
    const list = parseJson(trimmed, 1) as unknown[];
    if (!Array.isArray(list)) throw notJson(1, 'expected a JSON array');
    return { records: list.map((value, i) => ({ line: i + 1, value })) };
  }
  const lines = trimmed.split(/\r?\n/);
  if (lines.length === 1 || !lines[1]!.trim().startsWith('{')) {
    // A single object: either one record or an envelope such as Firecrawl's `{ status, data: [...] }`.
    try {
      const value = JSON.parse(trimmed) as unknown;
      if (typeof value === 'object' && value !== null && !Array.isArray(value))
        return { records: [{ line: 1, value }], envelope: value };
    } catch {
      // fall through to JSON lines, which names the failing line
    }
  }
  const records: ExportRecord[] = [];
  for (const [i, raw] of lines.entries()) {
    if (raw.trim() === '') continue;
    records.push({ line: i + 1, value: parseJson(raw, i + 1) });
  }
  return { records };
}

function parseJson(text: string, line: number): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (cause) {
    throw notJson(line, (cause as Error).message, cause);
  }
}

function notJson(line: number, detail: string, cause?: unknown): RagfreshError {
  return new RagfreshError(
    'INVALID_ARGUMENT',
    `import: line ${line} is not JSON (${detail}); give a JSON array, JSON lines or a CSV export.`,
    { scope: 'import', ...(cause === undefined ? {} : { cause }) },
  );
}

/** RFC 4180 CSV (quoted fields, doubled quotes, newlines inside quotes), first row the header. */
export function parseCsvRecords(text: string): ExportRecord[] {
  const rows: string[][] = [];
  const lineOf: number[] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let rowLine = 1;
  const src = text.replace(/^\uFEFF/, '');
  for (let i = 0; i < src.length; i++) {
    const ch = src[i]!;
    if (quoted) {
      if (ch === '"' && src[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else {
        if (ch === '\n') line++;
        field += ch;
      }
      continue;
    }
    if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && src[i + 1] === '\n') i++;
      row.push(field);
      field = '';
      if (row.some((f) => f !== '')) {
        rows.push(row);
        lineOf.push(rowLine);
      }
      row = [];
      line++;
      rowLine = line;
    } else field += ch;
  }
  row.push(field);
  if (row.some((f) => f !== '')) {
    rows.push(row);
    lineOf.push(rowLine);
  }
  const [header, ...body] = rows;
  if (header === undefined) return [];
  return body.map((cells, i) => ({
    line: lineOf[i + 1]!,
    value: Object.fromEntries(header.map((name, j) => [name.trim(), cells[j] ?? ''])),
  }));
}
