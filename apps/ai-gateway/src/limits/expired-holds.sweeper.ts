import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { CallAdmission } from './call-admission';

const EVERY_MS = 60_000;

/** Every minute, gives back budgets held and leases taken by calls that never settled (any replica may run it: the DELETE is atomic). */
@Injectable()
export class ExpiredHoldsSweeper implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger('Budgets');
  private timer?: NodeJS.Timeout;

  constructor(private readonly admission: CallAdmission) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.sweep(), EVERY_MS);
    this.timer.unref();
  }

  async sweep(): Promise<number> {
    try {
      const n = await this.admission.sweep();
      if (n) this.log.warn(`released ${n} expired budget hold(s) left by calls that never settled`);
      return n;
    } catch (e) {
      this.log.error(`could not release expired budget holds: ${(e as Error).message}`);
      return 0;
    }
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
