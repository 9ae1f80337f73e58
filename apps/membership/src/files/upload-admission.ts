import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Observable } from 'rxjs';
import type { Principal } from '@app/auth';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { clientLimitKey, Clock } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { FilesRepository } from './files.repository';

/** Uploads of one member read at once in a replica (each is held in memory up to UPLOAD_MAX_BYTES). */
export const UPLOADS_IN_FLIGHT_PER_MEMBER = 2;
/** Uploads read at once in a replica, all members together: at most this many times UPLOAD_MAX_BYTES held. */
export const UPLOADS_IN_FLIGHT_PER_REPLICA = 16;
/**
 * Uploads read at once in a replica from one client network (its address's limit key: an IPv4 address, an IPv6
 * network of RATE_LIMIT_IPV6_PREFIX bits), whatever accounts send them: one network cannot take all the slots.
 */
export const UPLOADS_IN_FLIGHT_PER_NETWORK = 4;
/**
 * The slowest an admitted upload's body may arrive, on average since it was admitted, once UPLOAD_RATE_GRACE_MS
 * have passed (16 KiB/s: a phone on a weak 3G link still sends several times that); slower is cut with 408.
 */
export const UPLOAD_MIN_BYTES_PER_SECOND = 16 * 1024;
/** Time an admitted upload has before its receive rate is judged (a slow start, a TCP window opening). */
export const UPLOAD_RATE_GRACE_MS = 10_000;
/** How often the receive rates of the uploads being read are checked (on the app's Clock). */
export const UPLOAD_RATE_CHECK_MS = 1_000;
/** What a multipart request may carry besides its file (boundaries, part headers, small fields). */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/** An admitted upload whose body is still arriving: what its receive rate is judged by. */
interface Receiving {
  req: Request;
  /** The connection's bytes read when it was admitted, and when (Clock time). */
  bytesAtStart: number;
  startedAt: number;
  /** Ends the request with `error` (its slot is given back first). */
  cut(error: BusinessException): void;
}

/**
 * Runs before the upload's body is read (multer holds a file in memory until the request ends):
 * - a member already keeping UPLOAD_MAX_BYTES_PER_MEMBER, or announcing a body that cannot fit what is left,
 *   is refused 413 without a byte read (the audit: a member over quota could keep sending 10 MB bodies, each
 *   held whole before the quota said no);
 * - a member reading UPLOADS_IN_FLIGHT_PER_MEMBER uploads already in this replica gets 429, a client network
 *   reading UPLOADS_IN_FLIGHT_PER_NETWORK gets 429, and the replica reading UPLOADS_IN_FLIGHT_PER_REPLICA
 *   gets 503, all with Retry-After (30 parallel uploads of one member took a replica from 239 MB to 601 MB;
 *   a few free accounts of one address could hold all the replica's slots);
 * - an admitted upload whose body arrives slower than UPLOAD_MIN_BYTES_PER_SECOND on average, past
 *   UPLOAD_RATE_GRACE_MS, is cut with 408 and its slot given back at once (a trickled body held its slot until
 *   REQUEST_TIMEOUT_MS). The bytes are the connection's `bytesRead`, so multer's reading is left alone.
 * The slots are this replica's memory, not a shared limit; the quota itself is checked again, exactly, when
 * the file is recorded (FilesRepository.insertWithinQuota).
 */
@Injectable()
export class UploadAdmission implements NestInterceptor {
  private readonly perMember = new Map<string, number>();
  private readonly perNetwork = new Map<string, number>();
  private total = 0;
  private readonly receiving = new Set<Receiving>();
  private checking = false;

  constructor(
    private readonly files: FilesRepository,
    private readonly config: MembershipConfig,
    private readonly clock: Clock,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = context.switchToHttp();
    const req = http.getRequest<Request & { principal?: Principal }>();
    const res = http.getResponse<Response>();
    const memberId = req.principal?.id;
    if (!memberId) return next.handle();
    const quota = this.config.UPLOAD_MAX_BYTES_PER_MEMBER;
    const announced = Number(req.headers['content-length']);
    const used = await this.files.usedBytes(memberId);
    if (used >= quota || (Number.isFinite(announced) && announced - MULTIPART_OVERHEAD_BYTES > quota - used))
      throw new BusinessException(ErrorCode.PAYLOAD_TOO_LARGE, msg('files.quotaExceeded', { max: quota }));
    if ((this.perMember.get(memberId) ?? 0) >= UPLOADS_IN_FLIGHT_PER_MEMBER)
      throw new BusinessException(ErrorCode.TOO_MANY_REQUESTS, msg('files.uploadsInFlight'), {
        retryAfterSeconds: 1,
      });
    const network = clientLimitKey(req, this.config.RATE_LIMIT_IPV6_PREFIX);
    if ((this.perNetwork.get(network) ?? 0) >= UPLOADS_IN_FLIGHT_PER_NETWORK)
      throw new BusinessException(ErrorCode.TOO_MANY_REQUESTS, msg('files.uploadsFromNetwork'), {
        retryAfterSeconds: 1,
      });
    if (this.total >= UPLOADS_IN_FLIGHT_PER_REPLICA)
      throw new BusinessException(ErrorCode.SERVICE_UNAVAILABLE, msg('request.dependencyDown'), {
        retryAfterSeconds: 1,
      });
    increment(this.perMember, memberId);
    increment(this.perNetwork, network);
    this.total++;
    let released = false;
    let receiving: Receiving | undefined;
    const release = () => {
      if (released) return;
      released = true;
      if (receiving) this.receiving.delete(receiving);
      this.total--;
      decrement(this.perMember, memberId);
      decrement(this.perNetwork, network);
    };
    res.once('close', release);
    res.once('finish', release);
    // A client gone while its upload was admitted (the guard, the quota read): 'close' came before the
    // listeners, so the slot is given back now, or it would stay taken for good.
    if (res.closed || res.destroyed || req.socket.destroyed) {
      release();
      throw new BusinessException(ErrorCode.BAD_REQUEST, msg('request.aborted'));
    }
    const bytesAtStart = req.socket.bytesRead;
    // A connection that does not count its bytes (a stand-in) is left to REQUEST_TIMEOUT_MS.
    if (typeof bytesAtStart !== 'number') return next.handle();
    return new Observable<unknown>((subscriber) => {
      receiving = {
        req,
        bytesAtStart,
        startedAt: this.clock.now(),
        cut: (error) => {
          release();
          // The connection goes once the answer is out: the rest of the body is not read (multer stops for a
          // destroyed request and drops what it held).
          if (!res.headersSent) res.setHeader('Connection', 'close');
          res.once('finish', () => req.socket.destroy());
          subscriber.error(error);
        },
      };
      if (!released) {
        this.receiving.add(receiving);
        void this.checkRates();
      }
      const handled = next.handle().subscribe(subscriber);
      return () => handled.unsubscribe();
    });
  }

  /** Uploads being read in this replica (for tests). */
  get inFlight(): number {
    return this.total;
  }

  /**
   * Every UPLOAD_RATE_CHECK_MS while bodies are arriving: cuts those received slower than the floor. One
   * loop per replica; it holds no request once the request's slot is given back.
   */
  private async checkRates(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      while (this.receiving.size > 0) {
        // The app's Clock (a test moves it); its wait keeps no process up if the last upload ends meanwhile.
        await this.clock.sleep(UPLOAD_RATE_CHECK_MS);
        const now = this.clock.now();
        for (const r of [...this.receiving]) {
          // The whole body is here: what follows (storing, recording) is the server's time, not the client's.
          if (r.req.complete) {
            this.receiving.delete(r);
            continue;
          }
          const elapsed = now - r.startedAt;
          if (elapsed < UPLOAD_RATE_GRACE_MS) continue;
          const received = r.req.socket.bytesRead - r.bytesAtStart;
          if (received * 1000 < UPLOAD_MIN_BYTES_PER_SECOND * elapsed)
            r.cut(
              new BusinessException(
                ErrorCode.REQUEST_TIMEOUT,
                msg('files.uploadTooSlow', { rate: UPLOAD_MIN_BYTES_PER_SECOND / 1024 }),
              ),
            );
        }
      }
    } finally {
      this.checking = false;
    }
  }
}

function increment(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 1) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
