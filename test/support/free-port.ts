import * as fs from 'fs';
import * as net from 'net';

/**
 * A TCP port free on 127.0.0.1 for a server this process does not hold itself: a child process
 * (`npm start`, PostgreSQL, a container) told to listen there, or a port a test connects to expecting
 * nothing to answer.
 *
 * Asking the kernel (listen on 0, close, hand the number on) races the whole machine: the number comes
 * from the ephemeral range, so between the close and the child's listen any other socket — another
 * suite's listen(0), any outgoing connection — can be given it (CI once failed with EADDRINUSE that
 * way). Ports here come from below the ephemeral range (`ip_local_port_range`), which the kernel never
 * hands out by itself, so only a server listening on a fixed number could hold one, and each is checked
 * free before it is returned. Every Jest worker takes its numbers from its own block, the blocks of one
 * run rotated by the run's main process id so that concurrent runs on one machine mostly use different
 * blocks too; a suite never gets the same number twice.
 */
const FIRST = 10_000;
const BLOCK = 400;

function ephemeralStart(): number {
  try {
    const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > FIRST + 4 * BLOCK) return low;
  } catch {
    // not Linux: 32768 is below the BSD/macOS range (49152) and Linux's default
  }
  return 32_768;
}

const blocks = Math.floor((ephemeralStart() - FIRST) / BLOCK);
// Jest's main process runs the global setup (no worker id, block 0); its workers are numbered from 1.
const worker = Number(process.env.JEST_WORKER_ID ?? 0);
const run = process.env.JEST_WORKER_ID ? process.ppid : process.pid;
const blockStart = FIRST + ((worker + run) % blocks) * BLOCK;
let next = 0;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  while (next < BLOCK) {
    const port = blockStart + next++;
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port left in ${blockStart}-${blockStart + BLOCK - 1}`);
}
