import type { Reason } from '@ragfresh/core';
/**
 * An export read as a stream: text goes in chunk by chunk, records come out as soon as they end,
 * so a multi-GB export never sits in memory whole. The reader only finds record boundaries
 * (strings, escapes, nesting); each record's own text is then checked by `JSON.parse`. A record
 * longer than `maxRecordChars`, or nested deeper than `maxDepth`, is refused with its reason
 * and its text is dropped as it streams past: memory per record is bounded by the cap.
 *
 * Layouts, chosen by the first character that is not whitespace:
 * - `[`: a JSON array; each element is a record (`line` = its 1-based position).
 * - `{`: JSON lines (or one pretty-printed object, or concatenated objects); each top-level
 *   value is a record (`line` = the line it starts on). When the first value ends on its own
 *   line the input is JSON lines, and a line that ends inside an unclosed record is that
 *   record's alone (unreadable); the next line is read. If the first value has a `data` key
 *   holding an array or an object, it is a vendor envelope (Firecrawl's crawl answer): the
 *   elements of `data` are the records, and its other fields are the envelope (with `data`
 *   empty).
 * - anything else, when CSV is allowed: RFC 4180 CSV whose first record is the header.
 */

/** One item of an export, in input order. */
export type ExportItem =
  | { readonly kind: 'record'; readonly line: number; readonly value: unknown }
  | { readonly kind: 'unreadable'; readonly line: number; readonly reason: string }
  | {
      readonly kind: 'refused';
      readonly line: number;
      readonly reason: Reason;
      /** The record's URL when one could be seen before the cap (for the report only). */
      readonly url?: string;
    };

export interface ReaderLimits {
  /** Characters of one record's text (its JSON or CSV record, not only its body). */
  readonly maxRecordChars: number;
  /** Nesting of a JSON record's arrays and objects. */
  readonly maxDepth: number;
}

export interface ExportReaderOptions {
  readonly limits: ReaderLimits;
  /** Read input that is not JSON as CSV (Web Scraper exports). */
  readonly csv: boolean;
}

// Enough of a record's start to find its URL for the report when the record itself is refused.
const PREFIX_CHARS = 8192;
const URL_SNIFF = /"(?:url|sourceURL)"\s*:\s*"([^"\\\s]{1,2048})"/;

function tooLarge(limits: ReaderLimits): Reason {
  return {
    code: 'record-too-large',
    detail: `more than ${limits.maxRecordChars} chars, over the per-record limit; its text was not kept`,
  };
}

/** A record being collected: its text in parts, or, past a cap, only why it is refused. */
class Collected {
  readonly line: number;
  /** Depth of the container that holds this record (the record's own values are deeper). */
  readonly base: number;
  #parts: string[] = [];
  #chars = 0;
  #prefix = '';
  refused: Reason | undefined;

  constructor(line: number, base: number) {
    this.line = line;
    this.base = base;
  }

  add(text: string, limits: ReaderLimits): void {
    if (this.refused !== undefined) return;
    this.#chars += text.length;
    if (this.#chars > limits.maxRecordChars) this.#refuse(tooLarge(limits), text);
    else this.#parts.push(text);
  }

  tooDeep(depth: number, limits: ReaderLimits): void {
    if (this.refused !== undefined) return;
    this.#refuse({
      code: 'record-too-deep',
      detail: `nested ${depth} levels, over the ${limits.maxDepth}-level limit`,
    });
  }

  /** Drops the text, keeping only its start (where the record's URL usually is). */
  #refuse(reason: Reason, more = ''): void {
    this.refused = reason;
    this.#prefix = `${this.#parts.join('')}${more.slice(0, PREFIX_CHARS)}`.slice(0, PREFIX_CHARS);
    this.#parts = [];
  }

  finish(): ExportItem {
    if (this.refused !== undefined) {
      const url = URL_SNIFF.exec(this.#prefix)?.[1];
      return {
        kind: 'refused',
        line: this.line,
        reason: this.refused,
        ...(url === undefined ? {} : { url }),
      };
    }
    const text = this.#parts.join('');
    try {
      return { kind: 'record', line: this.line, value: JSON.parse(text) as unknown };
    } catch (err) {
      return {
        kind: 'unreadable',
        line: this.line,
        reason: `not JSON (${(err as Error).message.slice(0, 200)})`,
      };
    }
  }

  truncated(): ExportItem {
    return this.refused !== undefined
      ? this.finish()
      : { kind: 'unreadable', line: this.line, reason: 'truncated: the input ends inside it' };
  }
}

const isSpace = (c: string) => c === ' ' || c === '\n' || c === '\r' || c === '\t';
const STRING_STOP = /["\\\n]/g;

/** Record boundaries of JSON input (an array, JSON lines, or an envelope). */
class JsonScanner {
  readonly #limits: ReaderLimits;
  readonly #array: boolean;
  #out: ExportItem[] = [];
  #depth = 0;
  #line = 1;
  #inString = false;
  #escape = false;
  /** The array mode's elements, or the envelope's `data` elements, sit at this depth (0: none). */
  #elementDepth: number;
  #index = 0;
  /** The top-level value (JSON lines / envelope) and the element (array / envelope data). */
  #top: Collected | undefined;
  #element: Collected | undefined;
  #done = false;
  // Envelope tracking: only the input's first top-level object may be one.
  #firstTop = true;
  #tracking = false;
  #keyPosition = false;
  #valuePosition = false;
  #key: string | undefined;
  #keyText: string | undefined;
  /** Inside the envelope's `data` value; `'{'` when it is one object (one record). */
  #data: '[' | '{' | undefined;
  envelope: Record<string, unknown> | undefined;
  #envelopeSeen = false;
  #sawUrlKey = false;
  /** Known once the first top-level value ends: true for JSON lines (one value per line). */
  #lines: boolean | undefined;

  constructor(limits: ReaderLimits, array: boolean, line: number) {
    this.#limits = limits;
    this.#array = array;
    this.#elementDepth = array ? 1 : 0;
    this.#line = line;
  }

  /** Where text goes now: the element being read, else the top-level value. */
  #sink(): Collected | undefined {
    return this.#elementDepth > 0 ? this.#element : this.#top;
  }

  #add(text: string): void {
    this.#sink()?.add(text, this.#limits);
  }

  #emit(item: ExportItem): void {
    this.#out.push(item);
  }

  write(text: string): ExportItem[] {
    let i = 0;
    const n = text.length;
    while (i < n && !this.#done) {
      if (this.#inString) {
        if (this.#escape) {
          this.#escape = false;
          this.#add(text[i]!);
          if (this.#keyText !== undefined) this.#keyText += text[i]!;
          i++;
          continue;
        }
        STRING_STOP.lastIndex = i;
        const m = STRING_STOP.exec(text);
        const stop = m === null ? n : m.index;
        if (stop > i) {
          const piece = text.slice(i, stop);
          this.#add(piece);
          if (this.#keyText !== undefined && this.#keyText.length < 64) this.#keyText += piece;
        }
        if (m === null) return this.#drain();
        const c = text[stop]!;
        i = stop + 1;
        if (c === '\\') {
          this.#escape = true;
          this.#add(c);
        } else if (c === '"') {
          this.#inString = false;
          this.#add(c);
          if (this.#keyText !== undefined) {
            this.#key = this.#keyText;
            // A record with a `url` of its own is a record, even if it has a `data` field.
            if (this.#key === 'url') this.#sawUrlKey = true;
            this.#keyText = undefined;
            this.#keyPosition = false;
          }
        } else this.#brokenLine();
        continue;
      }
      const c = text[i]!;
      i++;
      this.#structural(c);
    }
    return this.#drain();
  }

  #drain(): ExportItem[] {
    const out = this.#out;
    this.#out = [];
    return out;
  }

  /** A raw newline inside a string: JSON never has one, so the record is broken (a truncated line). */
  #brokenLine(): void {
    const at = this.#line;
    this.#line++;
    const record = this.#element ?? this.#top;
    this.#inString = false;
    this.#escape = false;
    this.#keyText = undefined;
    if (this.#array || this.#data !== undefined) {
      // Inside an array there is no line to resynchronise on: the rest cannot be split safely.
      this.#emit({
        kind: 'unreadable',
        line: record?.line ?? at,
        reason: `broken at line ${at} (a string runs past the end of the line); the records after it are not read`,
      });
      this.#done = true;
      return;
    }
    this.#emit({
      kind: 'unreadable',
      line: record?.line ?? at,
      reason: `not JSON (a string runs past the end of line ${at})`,
    });
    // JSON lines: the next line starts afresh.
    this.#top = undefined;
    this.#depth = 0;
    this.#tracking = false;
    this.#keyPosition = false;
    this.#valuePosition = false;
  }

  #startTop(c: string): void {
    this.#top = new Collected(this.#line, 0);
    if (this.#firstTop && c === '{') this.#tracking = true;
    this.#firstTop = false;
  }

  #startElement(): void {
    this.#index++;
    this.#element = new Collected(this.#index, this.#elementDepth);
  }

  #endElement(): void {
    if (this.#element === undefined) return;
    this.#emit(this.#element.finish());
    this.#element = undefined;
  }

  #endTop(): void {
    const top = this.#top;
    this.#top = undefined;
    this.#tracking = false;
    if (top === undefined) return;
    // A first value that ends on the line it began on: the input is JSON lines.
    this.#lines ??= top.line === this.#line;
    if (!this.#envelopeSeen) {
      this.#emit(top.finish());
      return;
    }
    const item = top.finish();
    if (item.kind === 'record' && typeof item.value === 'object' && item.value !== null)
      this.envelope = item.value as Record<string, unknown>;
    else
      this.#emit({
        kind: 'unreadable',
        line: top.line,
        reason: `the envelope's fields are unreadable (${item.kind === 'record' ? 'not an object' : item.reason}); its coverage is unknown`,
      });
  }

  #open(c: string): void {
    const d = this.#depth;
    if (this.#elementDepth > 0 && d === this.#elementDepth && this.#element === undefined)
      this.#startElement();
    else if (this.#elementDepth === 0 && d === 0 && this.#top === undefined) this.#startTop(c);
    if (this.#tracking && d === 1 && this.#valuePosition) {
      this.#valuePosition = false;
      if (this.#key === 'data' && !this.#sawUrlKey && !this.#envelopeSeen) {
        this.#envelopeSeen = true;
        this.#data = c as '[' | '{';
        // The envelope keeps `data` empty: its elements stream as records.
        this.#top?.add(c === '[' ? '[]' : '{}', this.#limits);
        this.#elementDepth = c === '[' ? 2 : 1;
        this.#depth = d + 1;
        if (c === '{') {
          this.#index++;
          this.#element = new Collected(this.#index, 1);
          this.#element.add(c, this.#limits);
        }
        return;
      }
    }
    this.#add(c);
    this.#depth = d + 1;
    const sink = this.#sink();
    if (sink !== undefined && this.#depth - sink.base > this.#limits.maxDepth)
      sink.tooDeep(this.#depth - sink.base, this.#limits);
    if (this.#tracking && this.#depth === 1) this.#keyPosition = true;
  }

  #close(c: string): void {
    if (this.#depth === 0) {
      // A closing bracket with nothing open: junk at the top level.
      this.#scalar(c);
      return;
    }
    if (this.#data !== undefined && this.#depth === 2) {
      // The envelope's `data` value itself closes.
      if (this.#data === '{') this.#element?.add(c, this.#limits);
      this.#endElement();
      this.#data = undefined;
      this.#elementDepth = 0;
      this.#depth = 1;
      return;
    }
    if (this.#array && this.#depth === 1) {
      // The array's own closing bracket: the export ends here.
      this.#endElement();
      this.#depth = 0;
      this.#done = true;
      return;
    }
    this.#add(c);
    this.#depth--;
    if (this.#elementDepth === 0 && this.#depth === 0) this.#endTop();
  }

  #scalar(c: string): void {
    const d = this.#depth;
    if (this.#elementDepth > 0 && d === this.#elementDepth && this.#element === undefined)
      this.#startElement();
    else if (this.#elementDepth === 0 && d === 0 && this.#top === undefined) this.#startTop(c);
    if (this.#tracking && d === 1 && this.#valuePosition) this.#valuePosition = false;
    this.#add(c);
  }

  #structural(c: string): void {
    if (c === '"') {
      this.#scalar(c);
      this.#inString = true;
      if (this.#tracking && this.#depth === 1 && this.#keyPosition && this.#data === undefined)
        this.#keyText = '';
      return;
    }
    if (c === '{' || c === '[') {
      this.#open(c);
      return;
    }
    if (c === '}' || c === ']') {
      this.#close(c);
      return;
    }
    if (c === ',') {
      if (this.#elementDepth > 0 && this.#depth === this.#elementDepth) {
        this.#endElement();
        return;
      }
      this.#add(c);
      if (this.#tracking && this.#depth === 1) this.#keyPosition = true;
      return;
    }
    if (c === ':') {
      this.#add(c);
      if (this.#tracking && this.#depth === 1) this.#valuePosition = true;
      return;
    }
    if (isSpace(c)) {
      if (c === '\n') {
        this.#line++;
        // A top-level scalar (JSON lines junk) ends with its line.
        if (this.#elementDepth === 0 && this.#depth === 0 && this.#top !== undefined) {
          this.#endTop();
          return;
        }
        if (this.#lines === true && this.#depth > 0) {
          // JSON lines: a record still open at its line's end is broken; the next line is read.
          this.#emit({
            kind: 'unreadable',
            line: this.#top?.line ?? this.#line - 1,
            reason: `not JSON (line ${this.#line - 1} ends inside an unclosed object or array)`,
          });
          this.#top = undefined;
          this.#depth = 0;
          return;
        }
      }
      if (this.#sink() !== undefined) this.#add(c);
      return;
    }
    this.#scalar(c);
  }

  end(): ExportItem[] {
    if (!this.#done) {
      if (this.#element !== undefined) {
        this.#emit(this.#element.truncated());
        this.#element = undefined;
      }
      if (this.#top !== undefined) {
        if (this.#depth === 0 && !this.#inString) this.#endTop();
        else {
          this.#emit(
            this.#envelopeSeen
              ? {
                  kind: 'unreadable',
                  line: this.#top.line,
                  reason: 'truncated: the input ends inside the envelope; its coverage is unknown',
                }
              : this.#top.truncated(),
          );
          this.#top = undefined;
        }
      } else if (this.#array && this.#index === 0 && this.#depth > 0)
        this.#emit({
          kind: 'unreadable',
          line: 1,
          reason: 'truncated: the JSON array is not closed',
        });
    }
    this.#done = true;
    return this.#drain();
  }
}

/** RFC 4180 CSV (quoted fields, doubled quotes, newlines inside quotes), first record the header. */
class CsvScanner {
  readonly #limits: ReaderLimits;
  #out: ExportItem[] = [];
  #header: string[] | undefined;
  #row: string[] = [];
  #field = '';
  #chars = 0;
  #refused: Reason | undefined;
  #quoted = false;
  #line = 1;
  #rowLine = 1;
  /** A `"` or `\r` at the end of a chunk, decided by the next chunk's first character. */
  #carry = '';

  constructor(limits: ReaderLimits, line: number) {
    this.#limits = limits;
    this.#line = line;
    this.#rowLine = line;
  }

  #addField(text: string): void {
    if (this.#refused !== undefined) return;
    this.#chars += text.length;
    if (this.#chars > this.#limits.maxRecordChars) {
      this.#refused = tooLarge(this.#limits);
      this.#row = [];
      this.#field = '';
    } else this.#field += text;
  }

  #endField(): void {
    if (this.#refused === undefined) this.#row.push(this.#field);
    this.#field = '';
  }

  #endRecord(): void {
    this.#endField();
    const row = this.#row;
    const refused = this.#refused;
    const line = this.#rowLine;
    this.#row = [];
    this.#chars = 0;
    this.#refused = undefined;
    if (refused !== undefined) {
      this.#out.push({ kind: 'refused', line, reason: refused });
      if (this.#header === undefined) this.#header = [];
      return;
    }
    if (!row.some((f) => f !== '')) return;
    if (this.#header === undefined) {
      this.#header = row.map((h) => h.trim());
      return;
    }
    const header = this.#header;
    this.#out.push({
      kind: 'record',
      line,
      value: Object.fromEntries(header.map((name, j) => [name, row[j] ?? ''])),
    });
  }

  write(chunk: string): ExportItem[] {
    const text = this.#carry + chunk;
    this.#carry = '';
    const n = text.length;
    let i = 0;
    while (i < n) {
      const ch = text[i]!;
      if (this.#quoted) {
        const q = text.indexOf('"', i);
        const stop = q < 0 ? n : q;
        if (stop > i) {
          const piece = text.slice(i, stop);
          for (let k = piece.indexOf('\n'); k >= 0; k = piece.indexOf('\n', k + 1)) this.#line++;
          this.#addField(piece);
        }
        if (q < 0) break;
        if (q + 1 >= n) {
          this.#carry = '"';
          break;
        }
        if (text[q + 1] === '"') {
          this.#addField('"');
          i = q + 2;
        } else {
          this.#quoted = false;
          i = q + 1;
        }
        continue;
      }
      if (ch === '"') this.#quoted = true;
      else if (ch === ',') this.#endField();
      else if (ch === '\n' || ch === '\r') {
        if (ch === '\r') {
          if (i + 1 >= n) {
            this.#carry = '\r';
            break;
          }
          if (text[i + 1] === '\n') i++;
        }
        this.#endRecord();
        this.#line++;
        this.#rowLine = this.#line;
      } else this.#addField(ch);
      i++;
    }
    const out = this.#out;
    this.#out = [];
    return out;
  }

  end(): ExportItem[] {
    if (this.#carry !== '') {
      const carry = this.#carry;
      this.#carry = '';
      // A lone `"` closes the quoted field; a lone `\r` ends the record.
      if (carry === '"') this.#quoted = false;
      else this.write('\n');
    }
    if (this.#quoted) {
      this.#out.push({
        kind: 'unreadable',
        line: this.#rowLine,
        reason: 'truncated: the input ends inside a quoted field',
      });
      this.#row = [];
      this.#field = '';
    } else this.#endRecord();
    const out = this.#out;
    this.#out = [];
    return out;
  }
}

/**
 * The streaming reader: `write` text as it arrives, `end` once; each returns the items that
 * became complete. The layout is decided by the first character that is not whitespace.
 */
export class ExportReader {
  readonly #options: ExportReaderOptions;
  #scanner: JsonScanner | CsvScanner | undefined;
  #first = true;
  #blankLines = 0;

  constructor(options: ExportReaderOptions) {
    this.#options = options;
  }

  /** The vendor envelope's fields (all but `data`), once the input has ended. */
  get envelope(): Record<string, unknown> | undefined {
    return this.#scanner instanceof JsonScanner ? this.#scanner.envelope : undefined;
  }

  write(text: string): ExportItem[] {
    let t = text;
    if (this.#first && t.length > 0) {
      this.#first = false;
      if (t.charCodeAt(0) === 0xfeff) t = t.slice(1);
    }
    if (this.#scanner === undefined) {
      const start = t.search(/\S/);
      // Leading blank chunks: only their lines are kept, so line numbers stay right.
      this.#blankLines += (start < 0 ? t : t.slice(0, start)).split('\n').length - 1;
      if (start < 0) return [];
      t = t.slice(start);
      const c = t[0];
      const { limits, csv } = this.#options;
      const line = 1 + this.#blankLines;
      this.#scanner =
        c === '['
          ? new JsonScanner(limits, true, line)
          : c === '{' || !csv
            ? new JsonScanner(limits, false, line)
            : new CsvScanner(limits, line);
    }
    return this.#scanner.write(t);
  }

  end(): ExportItem[] {
    return this.#scanner?.end() ?? [];
  }
}
