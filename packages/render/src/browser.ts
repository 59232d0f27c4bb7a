import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RagfreshError } from '@ragfresh/core';
import { type BrowserContext, chromium } from 'playwright-core';

/** Where the system Chromium lives on Debian; playwright-core never downloads a browser. */
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/** Flags for a quiet, stateless headless browser that phones nowhere on its own. */
export const CHROMIUM_ARGS: readonly string[] = Object.freeze([
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-dev-shm-usage',
]);

export interface RendererOptions {
  /** Chromium binary. Default: RAGFRESH_CHROMIUM env, else /usr/bin/chromium. */
  readonly executablePath?: string;
  readonly userAgent?: string;
}

export interface RenderOptions {
  /** Whole budget for navigation and network idle. Default 30000. */
  readonly timeoutMs?: number;
}

export interface RenderResult {
  /** Serialised DOM after the network went idle. */
  readonly html: string;
  /** URL after redirects. */
  readonly finalUrl: string;
  /** HTTP status of the main document, when the browser saw one. */
  readonly status?: number;
  readonly elapsedMs: number;
}

/**
 * One headless Chromium with a fresh, temporary profile, reused across `render` calls and
 * removed by `close`. Each call gets its own page; nothing persists between runs.
 */
export class Renderer {
  readonly #context: BrowserContext;
  readonly #profileDir: string;
  #closed = false;

  private constructor(context: BrowserContext, profileDir: string) {
    this.#context = context;
    this.#profileDir = profileDir;
  }

  static async launch(options: RendererOptions = {}): Promise<Renderer> {
    const executablePath =
      options.executablePath ?? process.env.RAGFRESH_CHROMIUM ?? DEFAULT_CHROMIUM_PATH;
    if (!existsSync(executablePath)) {
      throw new RagfreshError(
        'NOT_SUPPORTED',
        `no Chromium at ${executablePath}; install it (Debian: apt-get install -y chromium) or set RAGFRESH_CHROMIUM.`,
        { scope: 'render' },
      );
    }
    const profileDir = await mkdtemp(join(tmpdir(), 'ragfresh-render-'));
    try {
      const context = await chromium.launchPersistentContext(profileDir, {
        executablePath,
        headless: true,
        args: [...CHROMIUM_ARGS],
        acceptDownloads: false,
        serviceWorkers: 'block',
        ...(options.userAgent ? { userAgent: options.userAgent } : {}),
      });
      return new Renderer(context, profileDir);
    } catch (cause) {
      await rm(profileDir, { recursive: true, force: true });
      throw new RagfreshError(
        'FETCH_FAILED',
        `could not start Chromium at ${executablePath}: ${(cause as Error).message.split('\n')[0]}`,
        {
          scope: 'render',
          cause,
        },
      );
    }
  }

  /** Loads `url`, waits for network idle, and returns the serialised DOM. */
  async render(url: string, options: RenderOptions = {}): Promise<RenderResult> {
    if (this.#closed)
      throw new RagfreshError('NOT_OPEN', 'renderer is closed; launch a new one.', {
        scope: 'render',
      });
    const timeout = options.timeoutMs ?? 30_000;
    const started = performance.now();
    const page = await this.#context.newPage();
    try {
      const response = await page.goto(url, { waitUntil: 'networkidle', timeout });
      const html = await page.content();
      const status = response?.status();
      return {
        html,
        finalUrl: page.url(),
        ...(status !== undefined ? { status } : {}),
        elapsedMs: Math.round(performance.now() - started),
      };
    } catch (cause) {
      throw new RagfreshError(
        'FETCH_FAILED',
        `rendering ${url} failed: ${(cause as Error).message.split('\n')[0]}`,
        {
          scope: 'render',
          cause,
        },
      );
    } finally {
      await page.close().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#context.close().catch(() => undefined);
    await rm(this.#profileDir, { recursive: true, force: true });
  }
}

/** Renders one URL with a browser launched for the call and closed after it. */
export async function render(
  url: string,
  options: RenderOptions & RendererOptions = {},
): Promise<RenderResult> {
  const renderer = await Renderer.launch(options);
  try {
    return await renderer.render(url, options);
  } finally {
    await renderer.close();
  }
}
