// A stand-in for an engine program (pocketsphinx_continuous, ffmpeg) in tests: a real child process
// that reports to the test over TCP and then runs until it is killed. Test code only.
import { once, EventEmitter } from 'events';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { createServer, Server, Socket } from 'net';
import { tmpdir } from 'os';
import * as path from 'path';

export interface FakeEngineBinary {
  /** Executable path; any arguments are accepted and ignored. */
  binary: string;
  /** A directory laid out like PocketSphinx's model dir (en-us/mdef exists). */
  modelDir: string;
  /** Pids of fakes that started and have not exited, in start order. */
  readonly running: number[];
  /** How many fakes ever started. */
  readonly started: number;
  /** Emits 'start' (pid) when a fake reports in and 'exit' (pid) when its process is gone. */
  readonly events: EventEmitter;
  /** Resolves once `n` fakes have ever started. */
  waitForStarts(n: number): Promise<void>;
  /** Resolves when the fake with this pid has exited (its socket closed because the process died). */
  waitForExit(pid: number): Promise<void>;
  close(): Promise<void>;
}

/** Whether a process with this pid still runs (a killed child not yet reaped, a zombie, does not). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // Linux: field 3 of /proc/<pid>/stat is the state; Z (zombie) and X (dead) no longer run.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX]/s.test(stat);
  } catch {
    return false;
  }
}

export async function startFakeEngineBinary(): Promise<FakeEngineBinary> {
  const dir = mkdtempSync(path.join(tmpdir(), 'fake-engine-'));
  const sockets = new Map<number, Socket>();
  const exited = new Set<number>();
  const events = new EventEmitter();
  events.setMaxListeners(0);
  let started = 0;
  const server: Server = createServer((socket) => {
    let pid = 0;
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => {
      if (pid) return;
      pid = Number(text.trim());
      sockets.set(pid, socket);
      started++;
      events.emit('start', pid);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (!pid) return;
      sockets.delete(pid);
      exited.add(pid);
      events.emit('exit', pid);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;

  const binary = path.join(dir, 'fake-engine');
  writeFileSync(
    binary,
    `#!${process.execPath}
const s = require('net').connect(${port}, '127.0.0.1', () => s.write(process.pid + '\\n'));
s.on('error', () => process.exit(1));
setInterval(() => undefined, 1 << 30);
`,
  );
  chmodSync(binary, 0o755);
  const modelDir = path.join(dir, 'model');
  mkdirSync(path.join(modelDir, 'en-us'), { recursive: true });
  writeFileSync(path.join(modelDir, 'en-us', 'mdef'), '');

  return {
    binary,
    modelDir,
    events,
    get running() {
      return [...sockets.keys()];
    },
    get started() {
      return started;
    },
    async waitForStarts(n) {
      while (started < n) await once(events, 'start');
    },
    async waitForExit(pid) {
      while (!exited.has(pid)) await once(events, 'exit');
    },
    async close() {
      for (const pid of sockets.keys()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      for (const s of sockets.values()) s.destroy();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
