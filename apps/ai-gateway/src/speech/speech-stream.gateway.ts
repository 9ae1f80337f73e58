import { BeforeApplicationShutdown, Inject, Logger, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { OnGatewayConnection, WebSocketGateway } from '@nestjs/websockets';
import type { IncomingMessage } from 'http';
import type { WebSocket } from 'ws';
import { AUTH_LIMITER, type AuthLimiter, type Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode, openAiErrorBody } from '../errors';
import { EngineAbortedError, resamplePcm, STT_SAMPLE_RATE } from '@app/engines';
import { GatewayConfig } from '../config/gateway.config';
import { GatewayAuthenticator } from '../keys/gateway.authenticator';
import { MeteringService, Reservation } from '../usage/metering.service';
import { LiveTranscription } from './live-transcription';
import { toMediaError } from '../vision/media-errors';
import { SilenceSegmenter, SpeechSegment } from './silence-segmenter';
import { TranscriptionEngines } from './transcription-engines';
import { raiseMessageLimit } from './bounded-ws-adapter';

/** Close codes of /v1/speech/stream (4000 range, after an `{"type":"error"}` message). */
export const STREAM_CLOSE = {
  /** No config message in time, or a missing/unknown/revoked key. */
  unauthorized: 4001,
  badConfig: 4002,
  forbidden: 4003,
  /** A text frame other than `{"type":"end"}` after the config. */
  audioExpected: 4004,
  idle: 4008,
  messageTooLarge: 4009,
  sessionLimit: 4010,
  /** A spent budget, a busy engine share, or an address blocked for refused credentials (rate_limit_exceeded). */
  quota: 4029,
  unavailable: 4503,
  internal: 4500,
} as const;

/** Close codes of the stream's own errors; every other error closes by its HTTP status (CLOSE_OF_STATUS). */
const CLOSE_OF_CODE: Partial<Record<GatewayErrorCode, number>> = {
  [GatewayErrorCode.StreamConfigTimeout]: STREAM_CLOSE.unauthorized,
  [GatewayErrorCode.StreamConfigExpected]: STREAM_CLOSE.badConfig,
  [GatewayErrorCode.StreamConfigPending]: STREAM_CLOSE.badConfig,
  [GatewayErrorCode.StreamInvalidConfig]: STREAM_CLOSE.badConfig,
  [GatewayErrorCode.StreamAudioExpected]: STREAM_CLOSE.audioExpected,
  [GatewayErrorCode.StreamIdleTimeout]: STREAM_CLOSE.idle,
  [GatewayErrorCode.StreamMessageTooLarge]: STREAM_CLOSE.messageTooLarge,
  [GatewayErrorCode.StreamSessionLimit]: STREAM_CLOSE.sessionLimit,
  [GatewayErrorCode.StreamSessionTooLong]: STREAM_CLOSE.sessionLimit,
  [GatewayErrorCode.ServerShutdown]: 1001,
};
const CLOSE_OF_STATUS: Record<number, number> = {
  401: STREAM_CLOSE.unauthorized,
  403: STREAM_CLOSE.forbidden,
  429: STREAM_CLOSE.quota,
  503: STREAM_CLOSE.unavailable,
};

/** The stream's one mapping of an error: the `{"type":"error"}` event's code and message, and the close code. */
export function streamError(e: unknown): { close: number; code: string; message: string; unexpected?: boolean } {
  // Catalog errors, Nest's own (the address limiter's 429) and the errors the HTTP answers map too (a statement cut
  // by statement_timeout: 503 database_timeout) say what they are; anything else is ours, unexplained.
  const mapped = openAiErrorBody(e);
  if (mapped.unexpected)
    return { close: STREAM_CLOSE.internal, code: 'internal_error', message: 'internal error', unexpected: true };
  const close =
    (e instanceof GatewayError ? CLOSE_OF_CODE[e.code as GatewayErrorCode] : undefined) ??
    CLOSE_OF_STATUS[mapped.status] ??
    STREAM_CLOSE.internal;
  return { close, code: mapped.body.error.code ?? 'internal_error', message: mapped.body.error.message };
}

const MAX_QUEUED_SEGMENTS = 3;
const PARTIAL_EVERY_SECONDS = 2;

/**
 * Live transcription. First message `{"type":"config","language","api_key","sample_rate"?}`, then
 * binary mono 16-bit little-endian PCM (16 kHz unless sample_rate says otherwise), then optionally
 * `{"type":"end"}`. Speech is cut on silence (or 15 s windows); each piece is transcribed in order and
 * answered as `{"type":"partial"|"final","text","start","end"}`. Billed per minute of audio received.
 */
@WebSocketGateway({ path: '/v1/speech/stream', maxPayload: 4 * 1024 * 1024 })
export class SpeechStreamGateway implements OnGatewayConnection, BeforeApplicationShutdown {
  private readonly log = new Logger('SpeechStream');
  private readonly sessions = new Set<StreamSession>();
  private readonly live: LiveTranscription;

  constructor(
    private readonly config: GatewayConfig,
    private readonly authenticator: GatewayAuthenticator,
    private readonly metering: MeteringService,
    private readonly engines: TranscriptionEngines,
    @Optional() @Inject(AUTH_LIMITER) private readonly limiter?: AuthLimiter,
    @Optional() private readonly adapterHost?: HttpAdapterHost,
  ) {
    this.live = new LiveTranscription(config, metering, engines);
  }

  handleConnection(client: WebSocket, req: IncomingMessage): void {
    // Every socket is a stranger until its config's key is accepted, under the same per-address limit of
    // refused credentials as HTTP (the upgrade bypasses Express's guards): a blocked address is refused at
    // once, and a socket that ends without an accepted key counts once against it (StreamSession).
    // The upgrade request is born an Express request (PlatformExpressAdapter): req.ip honours TRUST_PROXY.
    const caller = { ip: req ? ((req as { ip?: string }).ip ?? req.socket?.remoteAddress) : undefined };
    const givenId = req?.headers?.['x-request-id'];
    const session = new StreamSession(
      client,
      this.config,
      this.authenticator,
      this.live,
      this.log,
      typeof givenId === 'string' ? givenId : undefined,
      this.limiter,
      caller,
    );
    this.sessions.add(session);
    void session.settled.then(() => this.sessions.delete(session));
  }

  /** Open sessions are told the server is going away and billed before the database closes. */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([...this.sessions].map((s) => s.shutdown()));
  }
}

type State = 'awaiting-config' | 'authenticating' | 'streaming' | 'ending' | 'closed';

/** A text message as parsed: `config` first, then optionally `end`; every field is the client's to get wrong. */
type StreamMessage = {
  type?: unknown;
  api_key?: unknown;
  language?: unknown;
  sample_rate?: unknown;
  encoding?: unknown;
};

class StreamSession {
  private state: State = 'awaiting-config';
  private principal?: Principal;
  private reservation?: Reservation;
  private language?: string;
  private sampleRate = STT_SAMPLE_RATE;
  private segmenter = new SilenceSegmenter({ sampleRate: STT_SAMPLE_RATE });
  private leftover: Buffer | null = null;
  private samplesReceived = 0;
  private maxSeconds = 0;
  private queue: Array<{ segment: SpeechSegment; final: boolean }> = [];
  private working = false;
  private paused = false;
  private lastPartialAt = 0;
  private configTimer?: NodeJS.Timeout;
  private early: Array<{ data: Buffer; isBinary: boolean }> = [];
  private finished?: Promise<void>;
  private resolveSettled!: () => void;
  /** Resolves once the session is closed and billed. */
  readonly settled = new Promise<void>((r) => (this.resolveSettled = r));
  private earlyBytes = 0;
  /** Counted against its address as a refused credential (or refused as already blocked): at most once. */
  private strangerCounted = false;
  private idleTimer?: NodeJS.Timeout;
  /**
   * Ends a session at twice AI_STREAM_MAX_SECONDS of wall-clock time, whatever it carried: the audio limit
   * counts seconds received, so a client sending a few bytes within each idle timeout held a session (its
   * socket, its timers and its hold) for ever, billed nothing.
   */
  private lifeTimer?: NodeJS.Timeout;
  /** Aborted when the session ends for any reason: its engine work stops (child processes killed). */
  private readonly ended = new AbortController();

  constructor(
    private readonly ws: WebSocket,
    private readonly config: GatewayConfig,
    private readonly authenticator: GatewayAuthenticator,
    private readonly live: LiveTranscription,
    private readonly log: Logger,
    private readonly requestId?: string,
    private readonly limiter?: AuthLimiter,
    private readonly caller: { ip?: string } = {},
  ) {
    this.configTimer = setTimeout(
      () =>
        this.fail(new GatewayError(GatewayErrorCode.StreamConfigTimeout, { ms: config.AI_STREAM_CONFIG_TIMEOUT_MS })),
      config.AI_STREAM_CONFIG_TIMEOUT_MS,
    );
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) =>
      this.onMessage(toBuffer(data), isBinary),
    );
    ws.on('close', () => this.gone());
    // Also `ws`'s own refusal of a frame past the socket's limit (1009, BoundedWsAdapter).
    ws.on('error', () => this.gone());
    this.refusedAsBlocked();
  }

  private gone(): void {
    if (this.state === 'awaiting-config') void this.countStranger();
    void this.finish();
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (this.state === 'closed' || this.state === 'ending') return;
    if (data.length > this.config.AI_STREAM_MAX_MESSAGE_BYTES) {
      return this.fail(
        new GatewayError(GatewayErrorCode.StreamMessageTooLarge, { maxBytes: this.config.AI_STREAM_MAX_MESSAGE_BYTES }),
      );
    }
    if (this.state === 'awaiting-config') {
      if (this.refusedAsBlocked()) return;
      if (isBinary) return this.fail(new GatewayError(GatewayErrorCode.StreamConfigExpected));
      void this.configure(data.toString('utf8'));
      return;
    }
    if (this.state === 'authenticating') {
      // Audio sent right after the config waits (bounded) until the key is checked.
      this.early.push({ data, isBinary });
      this.earlyBytes += data.length;
      if (this.earlyBytes > 4 * this.config.AI_STREAM_MAX_MESSAGE_BYTES)
        this.fail(new GatewayError(GatewayErrorCode.StreamConfigPending));
      return;
    }
    this.touch();
    if (!isBinary) {
      let message: unknown;
      try {
        message = JSON.parse(data.toString('utf8'));
      } catch {
        message = null;
      }
      if ((message as StreamMessage | null)?.type === 'end') return void this.end();
      return this.fail(new GatewayError(GatewayErrorCode.StreamAudioExpected));
    }
    this.audio(data);
  }

  private async configure(text: string): Promise<void> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return this.badConfig('the config message must be JSON');
    }
    const message = parsed && typeof parsed === 'object' ? (parsed as StreamMessage) : undefined;
    if (message?.type !== 'config') return this.badConfig('the first message must have "type":"config"');
    if (typeof message.api_key !== 'string' || message.api_key === '')
      return this.fail(new GatewayError(GatewayErrorCode.StreamApiKeyMissing));
    if (
      message.language !== undefined &&
      (typeof message.language !== 'string' || !/^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$/.test(message.language))
    ) {
      return this.badConfig('language must be a language code such as en or zh-CN');
    }
    const rate = message.sample_rate ?? STT_SAMPLE_RATE;
    if (typeof rate !== 'number' || !Number.isInteger(rate) || rate < 8000 || rate > 48_000)
      return this.badConfig('sample_rate must be an integer from 8000 to 48000');
    if (message.encoding !== undefined && message.encoding !== 'pcm_s16le')
      return this.badConfig('encoding must be pcm_s16le');
    clearTimeout(this.configTimer);
    // A well-formed config: the audio frames that follow (even before ready) may be as large as the stream allows.
    raiseMessageLimit(this.ws, 2 * this.config.AI_STREAM_MAX_MESSAGE_BYTES);
    this.state = 'authenticating';
    this.language = message.language;
    this.sampleRate = rate;
    try {
      this.principal = await this.checkKey(message.api_key);
      const opened = await this.live.open(this.principal, this.language, () => !this.finished);
      this.maxSeconds = opened.maxSeconds;
      this.reservation = opened.reservation;
    } catch (e) {
      return this.fail(e);
    }
    // The client left while the reservation was being made: the session already settled (without it), so
    // this reservation is settled here, or its lease and hold would stay until they expire.
    if (this.finished) return void this.settleReservation();
    if (this.ws.readyState !== this.ws.OPEN) return void this.finish();
    this.state = 'streaming';
    this.touch();
    const lifeSeconds = 2 * this.config.AI_STREAM_MAX_SECONDS;
    this.lifeTimer = setTimeout(() => {
      const limit = streamError(new GatewayError(GatewayErrorCode.StreamSessionTooLong, { seconds: lifeSeconds }));
      this.send({ type: 'error', code: limit.code, message: limit.message });
      void this.end(limit.close, 'session limit');
    }, lifeSeconds * 1000);
    this.send({ type: 'ready', sample_rate: this.sampleRate, max_seconds: this.maxSeconds });
    const early = this.early;
    this.early = [];
    for (const m of early) this.onMessage(m.data, m.isBinary);
  }

  /** The key, under the per-address limit of refused credentials (an over-limit address: 429, closed 4029). */
  private async checkKey(apiKey: string): Promise<Principal> {
    this.limiter?.before(this.caller, null);
    try {
      return await this.authenticator.principalForKey(apiKey);
    } catch (e) {
      // A refused key counts here (its 429 once over the limit wins); any other refusal is of a known key.
      const refused = e instanceof GatewayError && e.getStatus() === 401;
      this.strangerCounted = true;
      if (refused) await this.limiter?.failed(this.caller, null);
      throw e;
    }
  }

  /** A blocked address is refused before anything of its socket is read: error 429, closed 4029; not counted again. */
  private refusedAsBlocked(): boolean {
    try {
      this.limiter?.before(this.caller, null);
      return false;
    } catch (e) {
      this.strangerCounted = true;
      this.fail(e);
      return true;
    }
  }

  /**
   * A socket that ends before its config named a key (bad JSON, no api_key, binary first, too large, no
   * config in time, the client gone) counts once against its address, as an HTTP request without
   * credentials does (libs/auth default-deny.guard.ts): a stranger's upgrades are as limited as its requests.
   */
  private async countStranger(): Promise<void> {
    if (this.strangerCounted || !this.limiter) return;
    this.strangerCounted = true;
    try {
      await this.limiter.failed(this.caller, null);
    } catch {
      // Over the limit: the address is blocked from its next upgrade on; this socket ends with its own error.
    }
  }

  private audio(data: Buffer): void {
    let bytes = this.leftover ? Buffer.concat([this.leftover, data]) : data;
    this.leftover = null;
    if (bytes.length % 2) {
      this.leftover = bytes.subarray(bytes.length - 1);
      bytes = bytes.subarray(0, bytes.length - 1);
    }
    const aligned = Buffer.from(bytes); // own, 2-byte aligned copy
    let pcm: Int16Array = new Int16Array(aligned.buffer, aligned.byteOffset, aligned.length / 2);
    this.samplesReceived += pcm.length;
    if (this.sampleRate !== STT_SAMPLE_RATE) pcm = resamplePcm(pcm, this.sampleRate, STT_SAMPLE_RATE);
    for (const segment of this.segmenter.push(pcm)) this.enqueue(segment, true);
    if (this.seconds >= this.maxSeconds) {
      const limit = streamError(new GatewayError(GatewayErrorCode.StreamSessionLimit, { seconds: this.maxSeconds }));
      this.send({ type: 'error', code: limit.code, message: limit.message });
      void this.end(limit.close, 'session limit');
      return;
    }
    const open = this.segmenter.openSegment();
    if (
      open &&
      !this.working &&
      this.queue.length === 0 &&
      open.end - open.start - this.lastPartialAt >= PARTIAL_EVERY_SECONDS
    ) {
      this.lastPartialAt = open.end - open.start;
      this.enqueue(open, false);
    }
    if (!this.segmenter.inSpeech) this.lastPartialAt = 0;
  }

  private get seconds(): number {
    return this.samplesReceived / this.sampleRate;
  }

  private enqueue(segment: SpeechSegment, final: boolean): void {
    this.queue.push({ segment, final });
    // Backpressure: stop reading the socket while transcription lags behind.
    if (this.queue.filter((q) => q.final).length > MAX_QUEUED_SEGMENTS && !this.paused) {
      this.paused = true;
      this.ws.pause();
    }
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.working) return;
    this.working = true;
    try {
      while (this.queue.length && this.state !== 'closed') {
        const { segment, final } = this.queue.shift()!;
        if (!final && this.queue.some((q) => q.final)) continue; // a stale partial
        try {
          // Counted against this key's share of the shared engine limiter; killed when the session ends.
          const result = await this.live.transcribe(segment.pcm, this.language, {
            key: this.principal?.id,
            signal: this.ended.signal,
          });
          const text = result.text.trim();
          if (text || final)
            this.send({ type: final ? 'final' : 'partial', text, start: segment.start, end: segment.end });
        } catch (e) {
          if (e instanceof EngineAbortedError || this.ended.signal.aborted) break;
          const mapped = toMediaError(e, 'audio');
          if (
            mapped instanceof GatewayError &&
            (mapped.code === GatewayErrorCode.EngineBusyForKey || mapped.code === GatewayErrorCode.EngineBusy)
          ) {
            // Refused, not queued without bound: this key (4029) or the whole server (4503) has no engine slot left.
            this.fail(mapped);
            break;
          }
          // The session goes on without this segment: an event, not a close.
          const failed = streamError(
            new GatewayError(GatewayErrorCode.StreamSegmentFailed, { reason: (e as Error).message }),
          );
          this.send({
            type: 'error',
            code: (mapped instanceof GatewayError && mapped.errorCode) || failed.code,
            message: failed.message,
          });
        }
        if (this.paused && this.queue.filter((q) => q.final).length <= 1) {
          this.paused = false;
          this.ws.resume();
        }
      }
    } finally {
      this.working = false;
    }
  }

  /**
   * Flushes the open segment, waits for every transcription, bills the session, then says goodbye and
   * closes: a client that has read `end` (or the close) sees its budget charged and its hold released.
   */
  private async end(code = 1000, reason = 'end'): Promise<void> {
    if (this.state !== 'streaming') return;
    this.state = 'ending';
    clearTimeout(this.idleTimer);
    clearTimeout(this.lifeTimer);
    const last = this.segmenter.flush();
    if (last) this.queue.push({ segment: last, final: true });
    this.queue = this.queue.filter((q) => q.final);
    await this.drain();
    while (this.working) await new Promise((r) => setTimeout(r, 20));
    await this.finish();
    this.send({ type: 'end', duration: round(this.seconds) });
    if (this.ws.readyState === this.ws.OPEN) this.ws.close(code, reason);
  }

  private touch(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      // Waiting on our own transcription (socket paused) is not the client's idleness.
      if (this.working || this.paused) return this.touch();
      this.fail(new GatewayError(GatewayErrorCode.StreamIdleTimeout, { ms: this.config.AI_STREAM_IDLE_TIMEOUT_MS }));
    }, this.config.AI_STREAM_IDLE_TIMEOUT_MS);
  }

  /**
   * Ends the session on an error: its event, then (once the session is billed, as for `end`) the close
   * code streamError gives it.
   */
  private fail(e: unknown): void {
    if (this.state === 'closed') {
      void this.finish();
      return;
    }
    const stranger = this.state === 'awaiting-config';
    const { close, code, message, unexpected } = streamError(e);
    if (unexpected) this.log.error(`stream failed: ${(e as Error)?.message}`);
    this.send({ type: 'error', code, message });
    const closeSocket = () => {
      if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING)
        this.ws.close(close, code.slice(0, 100));
    };
    // Closed once counted (a client that saw the close finds its address's count up to date) and billed,
    // also when billing failed (settle logs its own errors; nothing may reject unhandled here).
    // Otherwise no step more than end() takes: an error met while ending (engine_busy) closes with its own code first.
    const closing = stranger ? Promise.all([this.finish(), this.countStranger()]) : this.finish();
    void closing.then(closeSocket, closeSocket);
  }

  private badConfig(message: string): void {
    this.fail(new GatewayError(GatewayErrorCode.StreamInvalidConfig, { message }));
  }

  async shutdown(): Promise<void> {
    this.fail(new GatewayError(GatewayErrorCode.ServerShutdown));
    await this.settled;
  }

  /** Settles the bill once: the seconds of audio received. */
  private finish(): Promise<void> {
    this.finished ??= this.settle().finally(() => this.resolveSettled());
    return this.finished;
  }

  private async settle(): Promise<void> {
    this.state = 'closed';
    this.ended.abort();
    clearTimeout(this.configTimer);
    clearTimeout(this.idleTimer);
    clearTimeout(this.lifeTimer);
    this.queue = [];
    if (this.paused) this.ws.resume();
    await this.settleReservation();
  }

  /** The bill: the seconds of audio received. */
  private async settleReservation(): Promise<void> {
    if (this.reservation) await this.live.settle(this.reservation, round(this.seconds), this.requestId);
  }

  private send(message: Record<string, unknown>): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(message));
  }
}

function toBuffer(data: Buffer | ArrayBuffer | Buffer[]): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
