// No Docker engine runs here, so the image is assembled the way the Dockerfile says, in a temp dir:
// each stage's COPY lines are carried out (from the build context, honouring .dockerignore, or from
// an earlier stage), `node ...` RUN lines are run, and `npm ci` is replaced by the workspace's
// node_modules (a symlink) while recording whether it was --omit=dev. The result is the runtime
// stage's /app, which the container tests then start with the image's ENTRYPOINT.
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

export interface SimulatedImage {
  /** The final stage's /app. */
  appDir: string;
  /** ENV of the final stage. */
  env: Record<string, string>;
  /** ENTRYPOINT of the final stage (exec form), relative to appDir. */
  entrypoint: string[];
  /** HEALTHCHECK CMD of the final stage (exec form). */
  healthcheck: string[];
  /** Stages whose `npm ci` used --omit=dev. */
  productionOnlyStages: string[];
}

interface Stage {
  name: string;
  base: string;
  lines: string[];
}

function parseStages(dockerfile: string): { args: Record<string, string>; stages: Stage[] } {
  const lines = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const line of lines) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) {
      const base = from[1].replace(/\$\{(\w+)\}/g, (_, n) => args[n] ?? '');
      stages.push({ name: from[2] ?? String(stages.length), base, lines: [] });
    } else if (!stages.length) {
      const arg = /^ARG\s+(\w+)(?:=(.*))?$/.exec(line);
      if (arg) args[arg[1]] = arg[2] ?? '';
    } else {
      stages[stages.length - 1].lines.push(line);
    }
  }
  return { args, stages };
}

/** .dockerignore patterns (Go filepath.Match with `**`), as one predicate on context-relative paths. */
function dockerignore(contextDir: string): (rel: string) => boolean {
  const file = path.join(contextDir, '.dockerignore');
  const patterns = fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith('#'))
    : [];
  const regexes = patterns.map((p) => {
    const negate = p.startsWith('!');
    const body = (negate ? p.slice(1) : p).replace(/^\/+/, '').replace(/\/+$/, '');
    let re = '';
    for (let i = 0; i < body.length; i++) {
      const c = body[i];
      if (c === '*' && body[i + 1] === '*') {
        re += body[i + 2] === '/' ? '(?:.*/)?' : '.*';
        i += body[i + 2] === '/' ? 2 : 1;
      } else if (c === '*') re += '[^/]*';
      else if (c === '?') re += '[^/]';
      else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
    return { negate, re: new RegExp(`^${re}(?:/.*)?$`) };
  });
  return (rel) => {
    let ignored = false;
    for (const { negate, re } of regexes) if (re.test(rel)) ignored = !negate;
    return ignored;
  };
}

function copyFromContext(contextDir: string, ignored: (rel: string) => boolean, src: string, dest: string): void {
  const rel = path.normalize(src).replace(/\/+$/, '');
  const from = path.join(contextDir, rel);
  if (!fs.existsSync(from) || ignored(rel))
    throw new Error(`COPY ${src}: not in the build context (missing or .dockerignore'd)`);
  fs.cpSync(from, dest, {
    recursive: true,
    filter: (s) => !ignored(path.relative(contextDir, s)),
  });
}

/** Where `dest` of a COPY lands inside a stage directory, for a WORKDIR of /app. */
function destination(stageDir: string, dest: string, src: string, manySources: boolean): string {
  const inApp = dest.startsWith('/app') ? dest.slice('/app'.length) : dest.startsWith('/') ? null : dest;
  if (inApp === null) throw new Error(`COPY outside /app is not simulated: ${dest}`);
  const target = path.join(stageDir, inApp);
  return dest.endsWith('/') || manySources ? path.join(target, path.basename(src)) : target;
}

export function simulateImage(
  contextDir: string,
  workDir: string,
  log: (line: string) => void = () => undefined,
): SimulatedImage {
  const { stages } = parseStages(fs.readFileSync(path.join(contextDir, 'Dockerfile'), 'utf8'));
  const ignored = dockerignore(contextDir);
  const dirs = new Map<string, string>();
  const productionOnlyStages: string[] = [];
  let env: Record<string, string> = {};
  let entrypoint: string[] = [];
  let healthcheck: string[] = [];
  for (const stage of stages) {
    const dir = path.join(workDir, stage.name);
    if (dirs.has(stage.base)) fs.cpSync(dirs.get(stage.base)!, dir, { recursive: true, verbatimSymlinks: true });
    else fs.mkdirSync(dir, { recursive: true });
    dirs.set(stage.name, dir);
    env = {};
    for (const line of stage.lines) {
      const [instruction] = line.split(/\s+/, 1);
      const rest = line.slice(instruction.length).trim();
      switch (instruction.toUpperCase()) {
        case 'COPY': {
          const words = rest.split(/\s+/);
          const fromStage = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
          const paths = words.filter((w) => !w.startsWith('--'));
          const dest = paths.pop()!;
          for (const src of paths) {
            const target = destination(dir, dest, src, paths.length > 1);
            fs.mkdirSync(path.dirname(target), { recursive: true });
            if (fromStage) {
              const fromDir = dirs.get(fromStage);
              if (!fromDir) throw new Error(`COPY --from=${fromStage}: no such stage`);
              const from = path.join(fromDir, src.replace(/^\/app\/?/, ''));
              if (!fs.existsSync(from)) throw new Error(`COPY --from=${fromStage} ${src}: missing in that stage`);
              fs.cpSync(from, target, { recursive: true, verbatimSymlinks: true });
            } else copyFromContext(contextDir, ignored, src, target);
          }
          break;
        }
        case 'RUN': {
          const command = rest.replace(/--mount=\S+\s+/g, '');
          if (/\bnpm ci\b/.test(command)) {
            // The registry is not reachable for a real `npm ci` in a fresh dir: use the workspace's
            // installed tree; which packages the runtime may load is checked against the lockfile.
            if (!fs.existsSync(path.join(dir, 'node_modules')))
              fs.symlinkSync(path.join(contextDir, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
            if (/--omit=dev\b/.test(command)) productionOnlyStages.push(stage.name);
          } else if (/^node\s/.test(command)) {
            log(`[${stage.name}] RUN ${command}`);
            try {
              execFileSync('sh', ['-c', command], { cwd: dir, stdio: 'pipe', timeout: 300_000 });
            } catch (e: any) {
              // The image build would fail the same way (e.g. a type error anywhere in apps/ or libs/).
              throw new Error(`[${stage.name}] RUN ${command} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
            }
          }
          break;
        }
        case 'ENV': {
          for (const m of rest.matchAll(/(\w+)=("[^"]*"|\S+)/g))
            env[m[1]] = m[2].replace(/^"|"$/g, '').replace(/\$\{(\w+)\}/g, (_, n) => env[n] ?? '');
          break;
        }
        case 'ARG': {
          const arg = /^(\w+)=(.*)$/.exec(rest);
          if (arg) env[arg[1]] = arg[2];
          break;
        }
        case 'ENTRYPOINT':
          entrypoint = JSON.parse(rest);
          break;
        case 'HEALTHCHECK':
          healthcheck = JSON.parse(rest.slice(rest.indexOf('CMD') + 3).trim());
          break;
        default:
          break; // WORKDIR /app, USER, EXPOSE, LABEL, STOPSIGNAL: nothing to carry out here
      }
    }
  }
  const final = stages[stages.length - 1];
  return { appDir: dirs.get(final.name)!, env, entrypoint, healthcheck, productionOnlyStages };
}

/** Lockfile paths (`node_modules/a`, `node_modules/a/node_modules/b`) of dev-only packages. */
export function devOnlyPackages(contextDir: string): Set<string> {
  const lock = JSON.parse(fs.readFileSync(path.join(contextDir, 'package-lock.json'), 'utf8'));
  return new Set(
    Object.entries<any>(lock.packages ?? {})
      .filter(([p, info]) => p && info.dev === true)
      .map(([p]) => p),
  );
}

/** The lockfile path of the package a loaded file belongs to, or null outside node_modules. */
export function packageOf(file: string, nodeModulesRoot: string): string | null {
  const rel = path.relative(path.dirname(nodeModulesRoot), file);
  if (!rel.startsWith('node_modules' + path.sep)) return null;
  const parts = rel.split(path.sep);
  let last = -1;
  for (let i = 0; i < parts.length; i++) if (parts[i] === 'node_modules') last = i;
  const name = parts[last + 1]?.startsWith('@') ? parts.slice(last + 1, last + 3) : parts.slice(last + 1, last + 2);
  return [...parts.slice(0, last + 1), ...name].join('/');
}
