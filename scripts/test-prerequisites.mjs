// Runs before `pnpm test`: the rendering tests need a Chromium (Debian's `chromium`, or
// RAGFRESH_CHROMIUM). On a fresh machine of this kind it is missing: as root, install the
// Debian package (about a minute); otherwise stop at once with the one line that says how,
// instead of six failing test files later.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const path = process.env.RAGFRESH_CHROMIUM ?? '/usr/bin/chromium';
if (!existsSync(path)) {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = existsSync('/usr/bin/apt-get');
  if (root && apt) {
    process.stderr.write(
      `test: no Chromium at ${path}; installing Debian's chromium (apt-get, about a minute)\n`,
    );
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const steps = [
      ['apt-get', ['update', '-qq']],
      ['apt-get', ['install', '-y', '-qq', 'chromium']],
    ];
    for (const [cmd, args] of steps) {
      const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'], env });
      if (r.status !== 0) {
        process.stderr.write(
          `test: \`${cmd} ${args.join(' ')}\` failed; install Chromium yourself (apt-get install -y chromium) or set RAGFRESH_CHROMIUM.\n`,
        );
        process.exit(1);
      }
    }
  } else {
    process.stderr.write(
      `test: no Chromium at ${path} (the rendering tests need it); run \`sudo apt-get install -y chromium\`, or set RAGFRESH_CHROMIUM to a Chromium binary.\n`,
    );
    process.exit(1);
  }
}
