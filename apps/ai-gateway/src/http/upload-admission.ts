import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Observable } from 'rxjs';
import type { Principal } from '@app/auth';
import { Clock, UploadSlots } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { GatewayError, GatewayErrorCode } from '../errors';
import { shareOf } from '../keys/key-scopes';

/** What a speech upload may carry besides its file: 20 fields of 64 KiB (speech.module.ts), boundaries, part headers. */
const SPEECH_FORM_OVERHEAD_BYTES = 2 * 1024 * 1024;

/** The replica's slots for multipart uploads, answered in the gateway's OpenAI error shape. */
export function uploadSlotsFor(clock: Clock, config: GatewayConfig): UploadSlots {
  return new UploadSlots(clock, {
    maxUploads: Infinity,
    maxBytes: config.AI_UPLOAD_BYTES_IN_FLIGHT_MAX,
    replicaFull: () => new GatewayError(GatewayErrorCode.UploadsBusy),
    clientGone: () => new GatewayError(GatewayErrorCode.ClientClosedRequest),
    tooSlow: (rate) => new GatewayError(GatewayErrorCode.UploadTooSlow, { kibPerSecond: rate / 1024 }),
  });
}

/**
 * Runs on the multipart routes before multer (an interceptor after it in @UseInterceptors) reads a byte of the
 * body, after the route's guard (edit-upload.guard.ts: the scope and the Content-Length of an edit):
 * - a key's share (shareOf: its project, else the key) with AI_UPLOADS_PER_KEY uploads in progress in this
 *   replica gets 429, and a replica whose uploads may hold AI_UPLOAD_BYTES_IN_FLIGHT_MAX gets 503, both with
 *   Retry-After and the connection closed after the answer (the body is not read, not even to be dropped);
 * - an admitted upload arriving slower than 16 KiB/s on average after its first 10 s is cut with 408.
 * Before it, multer held every body whole before admission and billing said anything: some fifteen 64 MiB
 * edits at once took a 2 Gi replica down. UploadSlots (libs/platform/src/http/upload-slots.ts) does the counting
 * and the rate check, as for membership's uploads; its slots are one instance shared by the vision and speech
 * modules (uploads.module.ts).
 */
@Injectable()
export class UploadAdmission implements NestInterceptor {
  constructor(
    private readonly slots: UploadSlots,
    private readonly config: GatewayConfig,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const req = http.getRequest<Request & { principal?: Principal }>();
    const res = http.getResponse<Response>();
    // A JSON edit was read by the body reader already; multer reads only multipart bodies.
    if (!req.principal || !/^multipart\//i.test(req.headers['content-type'] ?? '')) return next.handle();
    const max = this.config.AI_UPLOADS_PER_KEY;
    const caller = {
      kind: 'share',
      key: shareOf(req.principal),
      max,
      refusal: () => new GatewayError(GatewayErrorCode.UploadsInFlightForKey, { max }),
    };
    try {
      return this.slots.admit(req, res, { callers: [caller], bytes: this.mostBytes(req) }, next);
    } catch (e) {
      // Keep-alive would read the refused body to drop it: the connection goes with the answer instead.
      if (!res.headersSent) res.setHeader('Connection', 'close');
      throw e;
    }
  }

  /**
   * What the upload can hold: twice its body, at most its Content-Length (Node reads no more) or the largest body a
   * multipart route takes (multer stops past its limits; a chunked one, speech only as an edit states its length,
   * counts as that). Twice: its files are copied into the form sent upstream (new Blob in
   * libs/llm/src/openai-media.client.ts) while multer's buffers are still held.
   */
  private mostBytes(req: Request): number {
    const most = Math.max(
      this.config.AI_MEDIA_MAX_EDIT_BYTES,
      this.config.AI_MEDIA_MAX_AUDIO_BYTES + SPEECH_FORM_OVERHEAD_BYTES,
    );
    const header = req.headers['content-length'];
    const body = header !== undefined && /^\d{1,15}$/.test(header) ? Math.min(Number(header), most) : most;
    return 2 * body;
  }
}
