import { createServer, type Server } from 'node:http';

type Labels = Readonly<Record<string, string>>;

interface Series {
  readonly help: string;
  readonly type: 'counter' | 'gauge';
  readonly values: Map<string, { labels: Labels; value: number }>;
}

function key(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** A small Prometheus text-format registry (counters and gauges). */
export class Metrics {
  readonly #series = new Map<string, Series>();

  #get(name: string, help: string, type: Series['type']): Series {
    let s = this.#series.get(name);
    if (s === undefined) {
      s = { help, type, values: new Map() };
      this.#series.set(name, s);
    }
    return s;
  }

  inc(name: string, help: string, labels: Labels = {}, by = 1): void {
    const s = this.#get(name, help, 'counter');
    const k = key(labels);
    const cur = s.values.get(k);
    s.values.set(k, { labels, value: (cur?.value ?? 0) + by });
  }

  set(name: string, help: string, labels: Labels, value: number): void {
    this.#get(name, help, 'gauge').values.set(key(labels), { labels, value });
  }

  value(name: string, labels: Labels = {}): number {
    return this.#series.get(name)?.values.get(key(labels))?.value ?? 0;
  }

  render(): string {
    const lines: string[] = [];
    for (const [name, s] of [...this.#series].sort(([a], [b]) => (a < b ? -1 : 1))) {
      lines.push(`# HELP ${name} ${s.help}`, `# TYPE ${name} ${s.type}`);
      for (const { labels, value } of s.values.values()) {
        const l = Object.entries(labels)
          .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
          .join(',');
        lines.push(`${name}${l === '' ? '' : `{${l}}`} ${Number.isFinite(value) ? value : 0}`);
      }
    }
    return `${lines.join('\n')}\n`;
  }

  /** Serves `/metrics` on 127.0.0.1:port (0 = any free port). */
  async serve(port: number, host = '127.0.0.1'): Promise<{ server: Server; port: number }> {
    const server = createServer((req, res) => {
      if (req.url === '/metrics') {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(this.render());
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(port, host, resolve));
    const addr = server.address();
    return { server, port: typeof addr === 'object' && addr !== null ? addr.port : port };
  }
}
