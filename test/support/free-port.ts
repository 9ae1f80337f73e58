import { randomInt } from 'crypto';
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
 * way). Ports here come from outside the ephemeral range (`ip_local_port_range`; below it, or above it
 * when it starts too low), which the kernel never hands out by itself, so only a server listening on a
 * fixed number could hold one, and each is checked free before it is returned. Within one run every
 * process has a block of its own: the global setup block 0, Jest worker N block N (in band: 1), the
 * blocks rotated by the run's id (the main process's pid, passed to the workers in TEST_PORTS_RUN) so
 * that concurrent runs on one machine mostly use different blocks too. Each suite starts at a random
 * place in its block (suites of one worker do not reuse the same numbers one after the other), and a
 * suite never gets the same number twice.
 */
const MAX_BLOCK = 400;
const MIN_BLOCK = 50;
const LOWEST = 10_000;

function freeRange(room: number): { first: number; last: number } {
  let low = 32_768;
  let high = 60_999;
  try {
    [low, high] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  } catch {
    // not Linux: 10000-32767 is below the BSD/macOS range (49152-65535) and Linux's default
  }
  if (low - LOWEST >= room) return { first: LOWEST, last: low - 1 };
  if (65_535 - high >= room) return { first: high + 1, last: 65_535 };
  process.stderr.write(
    `free-port: no room outside the ephemeral range ${low}-${high}; ports may collide with the kernel's\n`,
  );
  return { first: LOWEST, last: 32_767 };
}

let block: { start: number; size: number; next: number; given: Set<number> } | undefined;

function ownBlock(): { start: number; size: number; next: number; given: Set<number> } {
  if (block) return block;
  // One block for the global setup and one per worker (TEST_PORTS_WORKERS: Jest's maxWorkers, from the
  // global setup), so no two processes of a run share one whatever the machine's core count.
  const processes = Number(process.env.TEST_PORTS_WORKERS ?? 8) + 1;
  const { first, last } = freeRange(processes * MIN_BLOCK);
  const size = Math.max(MIN_BLOCK, Math.min(MAX_BLOCK, Math.floor((last - first + 1) / processes)));
  const blocks = Math.floor((last - first + 1) / size);
  const worker = Number(process.env.JEST_WORKER_ID ?? 0);
  // Set by the global setup; without it (a suite run some other way) the main process's pid is the best guess.
  const run = Number(process.env.TEST_PORTS_RUN ?? (process.env.JEST_WORKER_ID ? process.ppid : process.pid));
  block = { start: first + ((worker + run) % blocks) * size, size, next: randomInt(size), given: new Set() };
  return block;
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  const b = ownBlock();
  for (let tried = 0; tried < b.size; tried++) {
    const port = b.start + (b.next++ % b.size);
    if (b.given.has(port)) continue;
    if (await bindable(port)) {
      b.given.add(port);
      return port;
    }
  }
  throw new Error(`no free port left in ${b.start}-${b.start + b.size - 1}`);
}
