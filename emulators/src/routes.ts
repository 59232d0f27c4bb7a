// Emulator endpoints as declared tables (method, path template, handler), the way the Qdrant JS
// client declares its endpoints (`client.path('/collections/{collection_name}').method('get')`).
import type { EmulatorRequest } from './server.js';

/** A request matched to a route: its template and the decoded `{param}` segments. */
export interface RoutedRequest extends EmulatorRequest {
  /** `METHOD /path/{template}`, as counted in an emulator's `requests`. */
  readonly route: string;
  readonly params: Readonly<Record<string, string>>;
}

export interface Route<Ctx> {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** Path template; `{name}` matches one segment. */
  readonly path: string;
  readonly handler: (req: RoutedRequest, ctx: Ctx) => unknown;
}

function match(template: string, path: string): Record<string, string> | undefined {
  const want = template.split('/').filter(Boolean);
  const got = path.split('/').filter(Boolean);
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = decodeURIComponent(got[i]!);
    if (w.startsWith('{') && w.endsWith('}')) params[w.slice(1, -1)] = g;
    else if (w !== g) return undefined;
  }
  return params;
}

/** The route of `req` in `table` (first match), or undefined. */
export function findRoute<Ctx>(
  table: readonly Route<Ctx>[],
  req: EmulatorRequest,
): { route: Route<Ctx>; request: RoutedRequest } | undefined {
  for (const route of table) {
    if (route.method !== req.method) continue;
    const params = match(route.path, req.path);
    if (params === undefined) continue;
    return { route, request: { ...req, route: `${route.method} ${route.path}`, params } };
  }
  return undefined;
}
