// How hard the hardening suites push: small under `npm test`, larger under `npm run test:hardening`.
import { randomInt } from 'crypto';

/** Generated cases per operation (bad-input corpus) and attempts per attack loop. */
export const RUNS = Math.max(1, Number(process.env.HARDENING_RUNS) || 10);
/** Seconds of load soak. */
export const SOAK_SECONDS = Math.max(2, Number(process.env.SOAK_SECONDS) || 6);
/** fast-check seed: print it with every report so a failing run can be replayed (HARDENING_SEED=...). */
export const SEED = Number(process.env.HARDENING_SEED) || randomInt(1, 2 ** 31 - 1);

/** One line per figure, written straight to stdout (Jest's console wrapper adds stack noise). */
export function report(suite: string, figures: Record<string, unknown>): void {
  process.stdout.write(
    `[hardening] ${suite}: ${Object.entries(figures)
      .map(
        ([k, v]) =>
          `${k}=${typeof v === 'object' || v === undefined ? JSON.stringify(v) : String(v as string | number | boolean | bigint)}`,
      )
      .join(' ')}\n`,
  );
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
