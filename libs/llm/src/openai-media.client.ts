import { fetch, FormData, RequestInit } from 'undici';
import { upstreamErrorBody } from './http';
import { BulkPace, joinSliced, parseSliced } from './sliced-json';
import { parseSse } from './sse';
import { parseRetryAfter, UpstreamError } from './types';

export interface MediaUpstream {
  /** OpenAI-compatible base URL including the version path, e.g. https://api.openai.com/v1. */
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
  /** Extra headers on every call (a providers-file deployment's `headers`). */
  headers?: Record<string, string>;
  /**
   * Fetches an image URL the upstream answered with (instead of b64_json). The gateway passes its
   * SSRF-guarded fetcher: the URL is chosen by the upstream's answer, not by the operator. Without one, an
   * answer by URL fails (nothing is fetched unguarded).
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

/**
 * From this size an images answer is joined and parsed an image at a time on the call's pace (sliced-json.ts):
 * ten base64 images of 1.5 MB are a 20 MB answer, which as one `text()` and one `JSON.parse` held the event
 * loop ~40 and ~55 ms, and the ten decodes ~35 ms more.
 */
const SLICED_IMAGES_FROM = 64 * 1024;

/** An item of an images answer parsed by parseSliced: its base64 image decoded as it is read. */
interface ImageItem {
  b64_json?: string;
  url?: string;
  revised_prompt?: string;
  /** The decoded b64_json (set by the sliced parse instead of b64_json). */
  bytes?: Buffer;
}

function decodedImageItem(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const item = value as ImageItem;
  if (typeof item.b64_json !== 'string' || !item.b64_json) return value;
  const { b64_json, ...rest } = item;
  return { ...rest, bytes: Buffer.from(b64_json, 'base64') };
}

/** OpenAI-compatible `/images/generations` and `/audio/transcriptions` over undici. */
export class OpenAiMediaClient {
  constructor(private readonly upstream: MediaUpstream) {}

  private url(path: string): string {
    return this.upstream.baseUrl.replace(/\/+$/, '') + path;
  }

  private headers(): Record<string, string> {
    return {
      ...(this.upstream.headers ?? {}),
      ...(this.upstream.apiKey ? { authorization: `Bearer ${this.upstream.apiKey}` } : {}),
    };
  }

  /**
   * `extra`: the model's optional fields as the caller gave them (gpt-image-1: quality, background,
   * output_format, output_compression, moderation), passed on unchanged. `responseFormat` false for
   * models that always answer b64_json and refuse the field (gpt-image-1).
   */
  async generateImages(
    req: {
      model: string;
      prompt: string;
      n: number;
      size: string;
      extra?: Record<string, unknown>;
      responseFormat?: boolean;
    },
    signal?: AbortSignal,
    pace?: BulkPace,
  ): Promise<GeneratedImage[]> {
    const payload: Record<string, unknown> = {
      ...(req.extra ?? {}),
      model: req.model,
      prompt: req.prompt,
      n: req.n,
      size: req.size,
    };
    if (req.responseFormat !== false) payload.response_format = 'b64_json';
    const body = await this.call(
      '/images/generations',
      {
        method: 'POST',
        headers: { ...this.headers(), 'content-type': 'application/json' },
        body: JSON.stringify(payload),
        signal,
      },
      pace,
    );
    return this.images(body, req.n, signal);
  }

  /** The images of an images answer (`data[]`, b64_json or a URL downloaded through downloadImage), at most `n`. */
  private async images(body: unknown, n: number, signal?: AbortSignal): Promise<GeneratedImage[]> {
    const data = (body as { data?: ImageItem[] }).data;
    if (!Array.isArray(data) || data.length === 0)
      throw new UpstreamError('image upstream returned no images', 'protocol', 200);
    const images: GeneratedImage[] = [];
    for (const item of data.slice(0, n)) {
      if (item?.bytes instanceof Buffer)
        images.push({ bytes: item.bytes, contentType: 'image/png', revisedPrompt: item.revised_prompt });
      else if (item?.b64_json)
        images.push({
          bytes: Buffer.from(item.b64_json, 'base64'),
          contentType: 'image/png',
          revisedPrompt: item.revised_prompt,
        });
      else if (item?.url) {
        // Fetched only through the caller's downloader (the gateway's: the public-address guard, size and time
        // caps); never with a bare fetch to wherever an upstream's answer points.
        if (!this.upstream.downloadImage)
          throw new UpstreamError('image upstream answered a URL and no downloader is configured', 'protocol', 200);
        images.push({ ...(await this.upstream.downloadImage(item.url, signal)), revisedPrompt: item.revised_prompt });
      } else throw new UpstreamError('image upstream returned an entry without b64_json or url', 'protocol', 200);
    }
    return images;
  }

  async transcribe(
    req: { model: string; file: Buffer; filename: string; language?: string },
    signal?: AbortSignal,
  ): Promise<UpstreamTranscript> {
    const form = new FormData();
    form.append('file', new Blob([req.file]), req.filename);
    form.append('model', req.model);
    form.append('response_format', 'verbose_json');
    form.append('timestamp_granularities[]', 'segment');
    if (req.language) form.append('language', req.language);
    const body = (await this.call('/audio/transcriptions', {
      method: 'POST',
      headers: this.headers(),
      body: form,
      signal,
    })) as {
      text?: string;
      language?: string;
      duration?: number;
      segments?: Array<{ text?: string; start?: number; end?: number }>;
    };
    if (typeof body.text !== 'string')
      throw new UpstreamError('transcription upstream returned no text', 'protocol', 200);
    return {
      text: body.text,
      language: body.language,
      duration: body.duration,
      segments: (body.segments ?? []).map((s) => ({
        text: String(s.text ?? '').trim(),
        start: Number(s.start ?? 0),
        end: Number(s.end ?? 0),
      })),
    };
  }

  /**
   * An OpenAI `/audio/transcriptions` (or `/audio/translations`, `path`) call passed through: the
   * caller's `response_format` (json, text, srt, vtt, verbose_json, diarized_json),
   * `timestamp_granularities[]`, `prompt`, `temperature` and `extra` form fields (chunking_strategy,
   * known_speaker_names[], ...) go upstream as given, and the upstream's answer comes back as it is.
   */
  async transcribeRaw(
    req: RawAudioRequest,
    signal?: AbortSignal,
    path = '/audio/transcriptions',
  ): Promise<{ body: Buffer; contentType: string }> {
    const { res, text } = await this.send(path, {
      method: 'POST',
      headers: this.headers(),
      body: audioForm(req),
      signal,
    });
    if (!res.ok) this.fail(res, text);
    const json = /json/i.test(res.headers.get('content-type') ?? '') || /json$/.test(req.responseFormat);
    if (json) {
      try {
        JSON.parse(text);
      } catch {
        throw new UpstreamError(
          `upstream answered a ${req.responseFormat} ${path === '/audio/translations' ? 'translation' : 'transcription'} that is not JSON`,
          'protocol',
          res.status,
        );
      }
    }
    return {
      body: Buffer.from(text, 'utf8'),
      contentType: json ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8',
    };
  }

  /** `/audio/transcriptions` with `stream=true`: the upstream's events (transcript.text.delta, transcript.text.done) as parsed JSON. */
  async transcribeStream(req: RawAudioRequest, signal?: AbortSignal): Promise<AsyncIterable<Record<string, unknown>>> {
    const form = audioForm(req);
    form.append('stream', 'true');
    // OpenAI ignores `stream` for whisper-1 and answers the JSON transcript: relayed as the one event a
    // stream ends with (its usage only when counted in tokens, the only usage the event carries).
    return this.stream(
      '/audio/transcriptions',
      { method: 'POST', headers: this.headers(), body: form, signal },
      (json) => {
        const { text, usage } = json as { text?: unknown; usage?: { type?: unknown } };
        if (typeof text !== 'string') return undefined;
        return { type: 'transcript.text.done', text, ...(usage?.type === 'tokens' ? { usage } : {}) };
      },
    );
  }

  /** `/images/generations` with `stream: true`: the upstream's image_generation.* events as parsed JSON. */
  async generateImagesStream(
    payload: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<Record<string, unknown>>> {
    return this.stream('/images/generations', {
      method: 'POST',
      headers: { ...this.headers(), 'content-type': 'application/json' },
      body: JSON.stringify({ ...payload, stream: true }),
      signal,
    });
  }

  /**
   * `/images/edits` as multipart: one image goes as `image`, several as `image[]` (what OpenAI's own SDK
   * sends), the optional mask as `mask`, and the caller's string fields as given. Answers the images
   * like generateImages (streams: editImagesStream).
   */
  async editImages(req: ImageEditRequest, signal?: AbortSignal, pace?: BulkPace): Promise<GeneratedImage[]> {
    const body = await this.call(
      '/images/edits',
      {
        method: 'POST',
        headers: this.headers(),
        body: editForm(req),
        signal,
      },
      pace,
    );
    return this.images(body, req.n, signal);
  }

  async editImagesStream(req: ImageEditRequest, signal?: AbortSignal): Promise<AsyncIterable<Record<string, unknown>>> {
    const form = editForm(req);
    form.append('stream', 'true');
    return this.stream('/images/edits', { method: 'POST', headers: this.headers(), body: form, signal });
  }

  /** `/moderations`: the caller's JSON (input, model) as given; the upstream's CreateModerationResponse as parsed. */
  async moderate(
    payload: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<{ id?: unknown; model?: unknown; results: unknown[] }> {
    const body = (await this.call('/moderations', {
      method: 'POST',
      headers: { ...this.headers(), 'content-type': 'application/json' },
      body: JSON.stringify(payload),
      signal,
    })) as { results?: unknown };
    if (!Array.isArray(body?.results))
      throw new UpstreamError('moderation upstream answered no results', 'protocol', 200);
    return body as { results: unknown[] };
  }

  /**
   * A call answered with server-sent events: resolves once the upstream accepted it (an HTTP error is
   * thrown as UpstreamError before any event), then yields each event's JSON data; `[DONE]` ends it.
   * `fromJson` turns a plain JSON answer (an upstream that does not stream this model) into the one
   * event yielded; without it, or when it returns nothing, such an answer is a protocol error.
   */
  private async stream(
    path: string,
    init: { method: string; headers: Record<string, string>; body: RequestInit['body']; signal?: AbortSignal },
    fromJson?: (json: unknown) => Record<string, unknown> | undefined,
  ): Promise<AsyncIterable<Record<string, unknown>>> {
    const timeout = AbortSignal.timeout(this.upstream.timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let res;
    try {
      res = await fetch(this.url(path), { ...init, headers: { ...init.headers, accept: 'text/event-stream' }, signal });
    } catch (e) {
      if (timeout.aborted)
        throw new UpstreamError(`upstream did not answer within ${this.upstream.timeoutMs} ms`, 'timeout', 0);
      throw new UpstreamError(`upstream unreachable: ${(e as Error).message}`, 'network', 0);
    }
    if (!res.ok) this.fail(res, await res.text());
    if (fromJson && /json/i.test(res.headers.get('content-type') ?? '')) {
      let event: Record<string, unknown> | undefined;
      try {
        event = fromJson(JSON.parse(await res.text()));
      } catch {
        event = undefined;
      }
      if (!event)
        throw new UpstreamError(
          'upstream answered a stream request with JSON it does not stream',
          'protocol',
          res.status,
        );
      const only = event;
      return (async function* () {
        yield only;
      })();
    }
    if (!/text\/event-stream/i.test(res.headers.get('content-type') ?? '') || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      throw new UpstreamError('upstream answered a stream request without text/event-stream', 'protocol', res.status);
    }
    const body = res.body as AsyncIterable<Uint8Array>;
    const timeoutMs = this.upstream.timeoutMs;
    return (async function* () {
      try {
        for await (const event of parseSse(body)) {
          if (event.data === '[DONE]') return;
          let data: unknown;
          try {
            data = JSON.parse(event.data);
          } catch {
            throw new UpstreamError('upstream stream event is not JSON', 'protocol', 200);
          }
          if (typeof data !== 'object' || data === null || Array.isArray(data))
            throw new UpstreamError('upstream stream event is not a JSON object', 'protocol', 200);
          const error = (data as { error?: unknown }).error;
          if (error) {
            const err = upstreamErrorBody(error);
            throw new UpstreamError(err?.message ?? 'upstream stream failed', 'http', 500, undefined, err);
          }
          yield data as Record<string, unknown>;
        }
      } catch (e) {
        if (e instanceof UpstreamError) throw e;
        if (timeout.aborted)
          throw new UpstreamError(`upstream stream did not end within ${timeoutMs} ms`, 'timeout', 0);
        throw new UpstreamError(`upstream stream broke: ${(e as Error).message}`, 'network', 0);
      }
    })();
  }

  private async send(
    path: string,
    init: { method: string; headers: Record<string, string>; body: RequestInit['body']; signal?: AbortSignal },
  ) {
    const timeout = AbortSignal.timeout(this.upstream.timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    try {
      const res = await fetch(this.url(path), { ...init, signal });
      return { res, text: await res.text() };
    } catch (e) {
      if (timeout.aborted)
        throw new UpstreamError(`upstream did not answer within ${this.upstream.timeoutMs} ms`, 'timeout', 0);
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
    throw new UpstreamError(
      err?.message ?? `upstream answered HTTP ${res.status}`,
      'http',
      res.status,
      parseRetryAfter(res.headers.get('retry-after')),
      err,
    );
  }

  /**
   * One JSON call. With `pace`, an answer of SLICED_IMAGES_FROM bytes or more is read as bytes, joined and
   * parsed an item of `data` at a time, each item's b64_json decoded as it is read (`bytes`), on that pace.
   */
  private async call(
    path: string,
    init: { method: string; headers: Record<string, string>; body: RequestInit['body']; signal?: AbortSignal },
    pace?: BulkPace,
  ): Promise<unknown> {
    const timeout = AbortSignal.timeout(this.upstream.timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let res;
    let text = '';
    let sliced: Buffer | null = null;
    try {
      res = await fetch(this.url(path), { ...init, signal });
      if (pace && res.ok && res.body) {
        const pieces: Buffer[] = [];
        let size = 0;
        for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
          pieces.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          size += chunk.byteLength;
        }
        if (size >= SLICED_IMAGES_FROM) sliced = await joinSliced(pieces, size, pace);
        else text = Buffer.concat(pieces, size).toString('utf8');
      } else text = await res.text();
    } catch (e) {
      if (timeout.aborted)
        throw new UpstreamError(`upstream did not answer within ${this.upstream.timeoutMs} ms`, 'timeout', 0);
      throw new UpstreamError(`upstream unreachable: ${(e as Error).message}`, 'network', 0);
    }
    let json: { error?: unknown } | null;
    try {
      json = sliced
        ? await parseSliced(sliced, 'data', pace!, decodedImageItem)
        : ((text ? JSON.parse(text) : {}) as { error?: unknown } | null);
    } catch (e) {
      if (!(e instanceof SyntaxError)) throw e;
      throw new UpstreamError(
        `upstream answered HTTP ${res.status} with a non-JSON body`,
        res.ok ? 'protocol' : 'http',
        res.status,
      );
    }
    if (!res.ok) {
      const err = upstreamErrorBody(json?.error);
      throw new UpstreamError(
        err?.message ?? `upstream answered HTTP ${res.status}`,
        'http',
        res.status,
        parseRetryAfter(res.headers.get('retry-after')),
        err,
      );
    }
    return json;
  }
}

/** The form fields of an audio transcription or translation passed through. */
export interface RawAudioRequest {
  model: string;
  file: Buffer;
  filename: string;
  language?: string;
  responseFormat: string;
  timestampGranularities?: string[];
  prompt?: string;
  temperature?: number;
  /** Further fields as the caller sent them, in order (chunking_strategy, known_speaker_names[], include[], ...). */
  extra?: Array<[string, string]>;
}

function audioForm(req: RawAudioRequest): FormData {
  const form = new FormData();
  form.append('file', new Blob([req.file]), req.filename);
  form.append('model', req.model);
  form.append('response_format', req.responseFormat);
  for (const g of req.timestampGranularities ?? []) form.append('timestamp_granularities[]', g);
  if (req.language) form.append('language', req.language);
  if (req.prompt !== undefined) form.append('prompt', req.prompt);
  if (req.temperature !== undefined) form.append('temperature', String(req.temperature));
  for (const [name, value] of req.extra ?? []) form.append(name, value);
  return form;
}

export interface ImageEditRequest {
  model: string;
  prompt: string;
  n: number;
  images: Array<{ bytes: Buffer; filename: string; contentType: string }>;
  mask?: { bytes: Buffer; filename: string; contentType: string };
  /** The caller's other fields (size, quality, background, output_format, input_fidelity, partial_images, response_format, ...). */
  fields: Record<string, string>;
}

function editForm(req: ImageEditRequest): FormData {
  const form = new FormData();
  const name = req.images.length > 1 ? 'image[]' : 'image';
  for (const image of req.images)
    form.append(name, new Blob([image.bytes], { type: image.contentType }), image.filename);
  if (req.mask) form.append('mask', new Blob([req.mask.bytes], { type: req.mask.contentType }), req.mask.filename);
  form.append('model', req.model);
  form.append('prompt', req.prompt);
  form.append('n', String(req.n));
  for (const [k, v] of Object.entries(req.fields)) form.append(k, v);
  return form;
}
