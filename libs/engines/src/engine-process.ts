import { spawn } from 'child_process';
import { EventEmitter } from 'events';
import { EngineAbortedError, EngineCallOptions, limitEngineWork } from './engine-limiter';
import { EngineUnavailableError } from './engine-worker';

export interface EngineProcessOptions extends EngineCallOptions {
  /** Written to stdin, which is then closed; stdin is ignored when absent. */
  input?: Buffer;
  /** Killed (SIGKILL) after this long; the run rejects with `timeoutError()`. */
  timeoutMs: number;
  timeoutError: () => Error;
  /** Killed once stdout passes this many bytes; the run rejects with `outputError()`. */
  maxOutputBytes?: number;
  outputError?: () => Error;
  /** Count stdout bytes without keeping them. */
  discardOutput?: boolean;
}

export interface EngineProcessResult {
  stdout: Buffer;
  outputBytes: number;
  /** The first 64 KiB of stderr. */
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface LiveEngineProcess {
  pid: number;
  engine: string;
}

/**
 * The child processes the engines have running right now. Emits `spawn` and `exit` with a
 * LiveEngineProcess, so tests and health output can watch them without polling.
 */
class EngineProcessRegistry extends EventEmitter {
  private readonly children = new Map<number, LiveEngineProcess>();

  get live(): LiveEngineProcess[] {
    return [...this.children.values()];
  }

  add(p: LiveEngineProcess): void {
    this.children.set(p.pid, p);
    this.emit('spawn', p);
  }

  remove(pid: number): void {
    const p = this.children.get(pid);
    if (!p) return;
    this.children.delete(pid);
    this.emit('exit', p);
  }
}

export const engineProcesses = new EngineProcessRegistry();
engineProcesses.setMaxListeners(0);

/**
 * The one way an engine starts a child process: under the shared EngineLimiter (per key and per
 * process), with bounded time and output, and killed (SIGKILL) as soon as the caller's signal
 * aborts (client disconnect, socket close), in which case the run rejects with EngineAbortedError
 * once the child has exited.
 */
export function runEngineProcess(
  engine: string,
  binary: string,
  args: string[],
  opts: EngineProcessOptions,
): Promise<EngineProcessResult> {
  return limitEngineWork(opts, (signal) => spawnBounded(engine, binary, args, opts, signal));
}

function spawnBounded(
  engine: string,
  binary: string,
  args: string[],
  opts: EngineProcessOptions,
  signal: AbortSignal,
): Promise<EngineProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: [opts.input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let outputBytes = 0;
    let stderr = '';
    let failed: Error | null = null;
    const kill = (error: Error) => {
      failed ??= error;
      child.kill('SIGKILL');
    };
    const onAbort = () => kill(new EngineAbortedError());
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => kill(opts.timeoutError()), opts.timeoutMs);
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      if (child.pid !== undefined) engineProcesses.remove(child.pid);
    };
    if (child.pid !== undefined) engineProcesses.add({ pid: child.pid, engine });
    child.stdout!.on('data', (chunk: Buffer) => {
      outputBytes += chunk.length;
      if (opts.maxOutputBytes !== undefined && outputBytes > opts.maxOutputBytes)
        kill(opts.outputError?.() ?? opts.timeoutError());
      else if (!opts.discardOutput) out.push(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += chunk.toString('utf8');
    });
    child.on('error', (error) => {
      done();
      reject(new EngineUnavailableError(engine, error.message));
    });
    child.on('close', (code, exitSignal) => {
      done();
      if (failed) reject(failed);
      else resolve({ stdout: Buffer.concat(out), outputBytes, stderr, code, signal: exitSignal });
    });
    if (child.stdin) {
      child.stdin.on('error', () => undefined); // the program may exit before reading all input
      child.stdin.end(opts.input);
    }
    // Aborted between the slot being granted and the spawn.
    if (signal.aborted) onAbort();
  });
}
