import { fetch, FormData, RequestInit } from 'undici';
import { upstreamErrorBody } from './http';
import { parseRetryAfter, UpstreamError } from './types';

export interface MediaUpstream {
  /** OpenAI-compatible base URL including the version path, e.g. https://api.openai.com/v1. */
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
  /**
   * Fetches an image URL the upstream answered with (instead of b64_json). The gateway passes its
   * SSRF-guarded fetcher: the URL is chosen by the upstream's answer, not by the operator.
   */
  downloadImage?: (url: string, signal?: AbortSignal) => Promise<{ bytes: Buffer; contentType: string }>;
}

export interface GeneratedImage {
  bytes: Buffer;
  contentType: string;
  revisedPrompt?: string;
}

export interface UpstreamTranscript {
  text: string;
  language?: string;
  duration?: number;
  segments: Array<{ text: string; start: number; end: number }>;
}

const MAX_IMAGE_BYTES = 32 * 1024 * 1024;

/** OpenAI-compatible `/images/generations` and `/audio/transcriptions` over undici. */
export class OpenAiMediaClient {
  constructor(private readonly upstream: MediaUpstream) {}

  private url(path: string): string {
    return this.upstream.baseUrl.replace(/\/+$/, '') + path;
  }

  private headers(): Record<string, string> {
    return this.upstream.apiKey ? { authorization: `Bearer ${this.upstream.apiKey}` } : {};
  }

  /**
   * `extra`: the model's optional fields as the caller gave them (gpt-image-1: quality, background,
   * output_format, output_compression, moderation), passed on unchanged. `responseFormat` false for
   * models that always answer b64_json and refuse the field (gpt-image-1).
   */
  async generateImages(
    req: { model: string; prompt: string; n: number; size: string; extra?: Record<string, unknown>; responseFormat?: boolean },
    signal?: AbortSignal,
  ): Promise<GeneratedImage[]> {
    const payload: Record<string, unknown> = { ...(req.extra ?? {}), model: req.model, prompt: req.prompt, n: req.n, size: req.size };
    if (req.responseFormat !== false) payload.response_format = 'b64_json';
    const body = await this.call('/images/generations', {
      method: 'POST',
      headers: { ...this.headers(), 'content-type': 'application/json' },
      body: JSON.stringify(payload),
      signal,
    });
    const data = (body as { data?: Array<{ b64_json?: string; url?: string; revised_prompt?: string }> }).data;
    if (!Array.isArray(data) || data.length === 0) throw new UpstreamError('image upstream returned no images', 'protocol', 200);
    const images: GeneratedImage[] = [];
    for (const item of data.slice(0, req.n)) {
      if (item.b64_json) images.push({ bytes: Buffer.from(item.b64_json, 'base64'), contentType: 'image/png', revisedPrompt: item.revised_prompt });
      else if (item.url) images.push({ ...(await (this.upstream.downloadImage ?? this.download.bind(this))(item.url, signal)), revisedPrompt: item.revised_prompt });
      else throw new UpstreamError('image upstream returned an entry without b64_json or url', 'protocol', 200);
    }
    return images;
  }

  async transcribe(req: { model: string; file: Buffer; filename: string; language?: string }, signal?: AbortSignal): Promise<UpstreamTranscript> {
    const form = new FormData();
    form.append('file', new Blob([req.file]), req.filename);
    form.append('model', req.model);
    form.append('response_format', 'verbose_json');
    form.append('timestamp_granularities[]', 'segment');
    if (req.language) form.append('language', req.language);
    const body = (await this.call('/audio/transcriptions', { method: 'POST', headers: this.headers(), body: form, signal })) as {
      text?: string;
      language?: string;
      duration?: number;
      segments?: Array<{ text?: string; start?: number; end?: number }>;
    };
    if (typeof body.text !== 'string') throw new UpstreamError('transcription upstream returned no text', 'protocol', 200);
    return {
      text: body.text,
      language: body.language,
      duration: body.duration,
      segments: (body.segments ?? []).map((s) => ({ text: String(s.text ?? '').trim(), start: Number(s.start ?? 0), end: Number(s.end ?? 0) })),
    };
  }

  /**
   * An OpenAI `/audio/transcriptions` call passed through: the caller's `response_format` (json, text,
   * srt, vtt, verbose_json), `timestamp_granularities[]`, `prompt` and `temperature` go upstream as given,
   * and the upstream's answer comes back as it is (body and content type).
   */
  async transcribeRaw(
    req: { model: string; file: Buffer; filename: string; language?: string; responseFormat: string; timestampGranularities?: string[]; prompt?: string; temperature?: number },
    signal?: AbortSignal,
  ): Promise<{ body: Buffer; contentType: string }> {
    const form = new FormData();
    form.append('file', new Blob([req.file]), req.filename);
    form.append('model', req.model);
    form.append('response_format', req.responseFormat);
    for (const g of req.timestampGranularities ?? []) form.append('timestamp_granularities[]', g);
    if (req.language) form.append('language', req.language);
    if (req.prompt !== undefined) form.append('prompt', req.prompt);
    if (req.temperature !== undefined) form.append('temperature', String(req.temperature));
    const { res, text } = await this.send('/audio/transcriptions', { method: 'POST', headers: this.headers(), body: form, signal });
    if (!res.ok) this.fail(res, text);
    const json = /json/i.test(res.headers.get('content-type') ?? '') || req.responseFormat === 'json' || req.responseFormat === 'verbose_json';
    if (json) {
      try {
        JSON.parse(text);
      } catch {
        throw new UpstreamError(`upstream answered a ${req.responseFormat} transcription that is not JSON`, 'protocol', res.status);
      }
    }
    return { body: Buffer.from(text, 'utf8'), contentType: json ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8' };
  }

  private async send(path: string, init: { method: string; headers: Record<string, string>; body: RequestInit['body']; signal?: AbortSignal }) {
    const timeout = AbortSignal.timeout(this.upstream.timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    try {
      const res = await fetch(this.url(path), { ...init, signal });
      return { res, text: await res.text() };
    } catch (e) {
      if (timeout.aborted) throw new UpstreamError(`upstream did not answer within ${this.upstream.timeoutMs} ms`, 'timeout', 0);
      throw new UpstreamError(`upstream unreachable: ${(e as Error).message}`, 'network', 0);
    }
  }

  private fail(res: { status: number; headers: { get(name: string): string | null } }, text: string): never {
    let json: { error?: unknown } | null;
    try {
      json = (text ? JSON.parse(text) : {}) as { error?: unknown } | null;
    } catch {
      throw new UpstreamError(`upstream answered HTTP ${res.status} with a non-JSON body`, 'http', res.status);
    }
    const err = upstreamErrorBody(json?.error);
    throw new UpstreamError(err?.message ?? `upstream answered HTTP ${res.status}`, 'http', res.status, parseRetryAfter(res.headers.get('retry-after')), err);
  }

  private async call(path: string, init: { method: string; headers: Record<string, string>; body: RequestInit['body']; signal?: AbortSignal }): Promise<unknown> {
    const timeout = AbortSignal.timeout(this.upstream.timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let res;
    try {
      res = await fetch(this.url(path), { ...init, signal });
    } catch (e) {
      if (timeout.aborted) throw new UpstreamError(`upstream did not answer within ${this.upstream.timeoutMs} ms`, 'timeout', 0);
      throw new UpstreamError(`upstream unreachable: ${(e as Error).message}`, 'network', 0);
    }
    const text = await res.text();
    let json: { error?: unknown } | null;
    try {
      json = (text ? JSON.parse(text) : {}) as { error?: unknown } | null;
    } catch {
      throw new UpstreamError(`upstream answered HTTP ${res.status} with a non-JSON body`, res.ok ? 'protocol' : 'http', res.status);
    }
    if (!res.ok) {
      const err = upstreamErrorBody(json?.error);
      throw new UpstreamError(err?.message ?? `upstream answered HTTP ${res.status}`, 'http', res.status, parseRetryAfter(res.headers.get('retry-after')), err);
    }
    return json;
  }

  private async download(url: string, signal?: AbortSignal): Promise<{ bytes: Buffer; contentType: string }> {
    const timeout = AbortSignal.timeout(this.upstream.timeoutMs);
    const res = await fetch(url, { signal: signal ? AbortSignal.any([signal, timeout]) : timeout }).catch((e: Error) => {
      throw new UpstreamError(`generated image could not be downloaded: ${e.message}`, 'network', 0);
    });
    if (!res.ok || !res.body) throw new UpstreamError(`generated image download answered HTTP ${res.status}`, 'http', res.status);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      if (size > MAX_IMAGE_BYTES) throw new UpstreamError('generated image is too large', 'protocol', 200);
      chunks.push(Buffer.from(chunk));
    }
    return { bytes: Buffer.concat(chunks), contentType: res.headers.get('content-type') ?? 'image/png' };
  }
}
