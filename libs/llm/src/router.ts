// Picks a deployment for a public model: weighted choice, retries with backoff (honouring
// Retry-After), fallback to the next deployment, and a cooldown for deployments that just failed.
// A failure is the caller's until a second caller's confirms it: one key's failures cool a deployment
// for that key only (its request may be what failed), a second key's failure within the cooldown cools
// it for everyone. A timeout is tried again at most once, on another deployment: each timed-out attempt
// costs the upstream its whole timeout, and a failed call is not billed.
import { AnthropicClient, UnsupportedRequestError } from './anthropic-client';
import { catalogEntry, ModelInfo } from './catalog';
import {
  GenAiAttempt,
  GenAiOperation,
  genAiTarget,
  GenAiTarget,
  GenAiTelemetryOptions,
  observeStream,
} from './genai-telemetry';
import { LlmClient } from './llm-client';
import { OpenAiCompatibleClient } from './openai-client';
import { Deployment, ProvidersConfig, ProvidersFileError } from './providers-file';
import { servesTextCompletions, TextCompletion, TextCompletionRequest } from './text-completions';
import {
  CallAbortedError,
  CallOptions,
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  EmbeddingsRequest,
  EmbeddingsResponse,
  UpstreamError,
} from './types';

export interface Routed<T> {
  value: T;
  /** Deployment that served the call. */
  deployment: string;
  upstreamModel: string;
  attempts: number;
}

/** No deployment serves the requested model (503 at the gateway, or 404 if the model is unknown). */
export class NoDeploymentError extends Error {
  constructor(readonly model: string) {
    super(`no deployment serves model ${model}`);
    this.name = 'NoDeploymentError';
  }
}

export interface RouterOptions {
  /** In-process engines for `type: local` deployments, by engine name. */
  localEngines?: Record<string, LlmClient>;
  /** Replaces client construction (tests). */
  clientFactory?: (d: Deployment) => LlmClient;
  random?: () => number;
  now?: () => number;
  /** GenAI spans and metrics of every upstream attempt (genai-telemetry.ts); spans follow the global tracer. */
  telemetry?: GenAiTelemetryOptions;
}

/**
 * A deployment of this process went into cooldown (it was not cooling) or answered again after one. Per
 * process: each replica keeps its own cooldowns, so a listener that tells the world makes it once per
 * cluster itself (apps/ai-gateway/src/upstreams/upstream-events.ts).
 */
export type DeploymentHealthChange =
  | {
      state: 'cooled_down';
      deployment: string;
      at: number;
      until: number;
      status: number;
      kind: string;
      message: string;
    }
  | { state: 'recovered'; deployment: string; at: number };

interface Target {
  deployment: Deployment;
  upstreamModel: string;
  client: LlmClient;
  /** What each attempt's span and metrics carry, computed once. */
  genAi: GenAiTarget;
}

/** What the attempts of one routed call report: their operation and the request they send (for its parameters). */
interface Traced {
  operation: GenAiOperation;
  request?: ChatCompletionRequest | TextCompletionRequest | EmbeddingsRequest;
  /** The request as a deployment sends it, where that differs (embeddings: the deployment's encoding_format). */
  requestFor?: (d: Deployment) => ChatCompletionRequest | TextCompletionRequest | EmbeddingsRequest;
}

export class LlmRouter {
  private readonly clients = new Map<string, LlmClient>();
  private readonly targetsByModel = new Map<string, Target[]>();
  private readonly telemetry: GenAiTelemetryOptions;
  private readonly cooldownUntil = new Map<string, number>();
  /**
   * The one key whose failures cool a deployment for itself alone, until when. One entry per deployment:
   * a second key's failure before it ends makes the cooldown everyone's.
   */
  private readonly suspects = new Map<string, { key: string; until: number }>();
  private healthListener?: (change: DeploymentHealthChange) => void;
  private readonly random: () => number;
  private readonly now: () => number;

  constructor(
    readonly config: ProvidersConfig,
    private readonly opts: RouterOptions = {},
  ) {
    this.random = opts.random ?? Math.random;
    this.now = opts.now ?? Date.now;
    this.telemetry = opts.telemetry ?? {};
    for (const d of config.deployments) {
      if (d.type === 'anthropic') {
        const embedding = d.models.find((m) => catalogEntry(config.models, m.name)?.kind !== 'chat');
        if (embedding)
          throw new ProvidersFileError(
            `deployment ${d.name}: anthropic deployments serve chat models only (${embedding.name})`,
          );
      }
      this.clients.set(d.name, this.createClient(d));
    }
  }

  private createClient(d: Deployment): LlmClient {
    if (this.opts.clientFactory) return this.opts.clientFactory(d);
    switch (d.type) {
      case 'openai':
        return new OpenAiCompatibleClient(d);
      case 'anthropic':
        return new AnthropicClient(d);
      case 'local': {
        const engine = this.opts.localEngines && catalogEntry(this.opts.localEngines, d.engine ?? d.name);
        if (!engine)
          throw new ProvidersFileError(
            `deployment ${d.name}: no local engine named ${d.engine ?? d.name} in this build`,
          );
        return engine;
      }
    }
  }

  /** Called on each cooldown start and end of this process; it must not throw (it runs inside the call's routing). */
  onHealthChange(listener: (change: DeploymentHealthChange) => void): void {
    this.healthListener = listener;
  }

  /** Catalog entry of a public model, whether or not a deployment serves it (a name like `constructor` has none). */
  modelInfo(model: string): ModelInfo | undefined {
    return catalogEntry(this.config.models, model);
  }

  /** Public models served by at least one deployment (weight 0 parks a deployment). */
  servedModels(): ModelInfo[] {
    const names = new Set(
      this.config.deployments.filter((d) => d.weight > 0).flatMap((d) => d.models.map((m) => m.name)),
    );
    return [...names].map((n) => catalogEntry(this.config.models, n)).filter((m): m is ModelInfo => !!m);
  }

  isServed(model: string): boolean {
    return this.config.deployments.some((d) => d.weight > 0 && d.models.some((m) => m.name === model));
  }

  /** Some deployment serving the embeddings model takes token-array input as it is (else `embeddings` decodes it). */
  takesTokenIds(model: string): boolean {
    return this.targets(model).some((t) => takesTokenIds(t.deployment));
  }

  /** Some deployment serving the model offers legacy `/completions` (OpenAI type). */
  servesTextCompletions(model: string): boolean {
    return this.targets(model).some((t) => servesTextCompletions(t.client));
  }

  /** When this process's cooldown of a deployment ends (epoch ms), or null when it is not cooling down. */
  cooldownEndsAt(deployment: string): number | null {
    const until = this.cooldownUntil.get(deployment) ?? 0;
    return until > this.now() ? until : null;
  }

  /** True while a deployment is cooling down for every caller after failures (exposed for health and tests). */
  isCoolingDown(deployment: string): boolean {
    return (this.cooldownUntil.get(deployment) ?? 0) > this.now();
  }

  /** When a deployment's cooldown for this caller ends (its own or everyone's), or 0 when it is not cooling for it. */
  private coolingUntil(deployment: string, key: string | undefined, now: number): number {
    const everyone = this.cooldownUntil.get(deployment) ?? 0;
    if (everyone > now) return everyone;
    const suspect = this.suspects.get(deployment);
    return suspect && suspect.key === key && suspect.until > now ? suspect.until : 0;
  }

  async chat(req: ChatCompletionRequest, opts: CallOptions = {}): Promise<Routed<ChatCompletion>> {
    return this.run(req.model, opts, { operation: 'chat', request: req }, async (t, attempt) => {
      const res = await attempt.run(() =>
        t.client.chat(
          { ...req, model: t.upstreamModel },
          { ...opts, timeoutMs: opts.timeoutMs ?? t.deployment.timeoutMs },
        ),
      );
      attempt.response(res);
      return { ...res, model: req.model };
    });
  }

  /** Resolves once an upstream accepted the stream; later failures surface from the iterator. */
  async chatStream(
    req: ChatCompletionRequest,
    opts: CallOptions = {},
  ): Promise<Routed<AsyncIterable<ChatCompletionChunk>>> {
    return this.run(req.model, opts, { operation: 'chat', request: req }, async (t, attempt) => {
      const upstream = await attempt.run(() =>
        t.client.chatStream(
          { ...req, model: t.upstreamModel },
          { ...opts, timeoutMs: opts.timeoutMs ?? t.deployment.timeoutMs },
        ),
      );
      return asPublicModel(observeStream(upstream, attempt), req.model, t.deployment.name);
    });
  }

  /** Legacy text completions, over the deployments that offer them only. */
  async completions(req: TextCompletionRequest, opts: CallOptions = {}): Promise<Routed<TextCompletion>> {
    return this.run(
      req.model,
      opts,
      { operation: 'text_completion', request: req },
      async (t, attempt) => {
        const client = t.client;
        if (!servesTextCompletions(client)) throw new NoDeploymentError(req.model);
        const res = await attempt.run(() =>
          client.completions(
            { ...req, model: t.upstreamModel },
            { ...opts, timeoutMs: opts.timeoutMs ?? t.deployment.timeoutMs },
          ),
        );
        attempt.response(res);
        return { ...res, model: req.model };
      },
      (t) => servesTextCompletions(t.client),
    );
  }

  async completionsStream(
    req: TextCompletionRequest,
    opts: CallOptions = {},
  ): Promise<Routed<AsyncIterable<TextCompletion>>> {
    return this.run(
      req.model,
      opts,
      { operation: 'text_completion', request: req },
      async (t, attempt) => {
        const client = t.client;
        if (!servesTextCompletions(client)) throw new NoDeploymentError(req.model);
        const upstream = await attempt.run(() =>
          client.completionsStream(
            { ...req, model: t.upstreamModel },
            { ...opts, timeoutMs: opts.timeoutMs ?? t.deployment.timeoutMs },
          ),
        );
        return asPublicModel(observeStream(upstream, attempt), req.model, t.deployment.name);
      },
      (t) => servesTextCompletions(t.client),
    );
  }

  /**
   * `asText`: for token-array inputs, the texts to send a deployment that takes text only (every type
   * but `openai`); it throws (e.g. UnsupportedRequestError naming the deployment) when the ids have none.
   */
  async embeddings(
    req: EmbeddingsRequest,
    opts: CallOptions = {},
    asText?: (deployment: Deployment) => string[],
  ): Promise<Routed<EmbeddingsResponse>> {
    const tokens = Array.isArray(req.input) && req.input.length > 0 && typeof req.input[0] !== 'string';
    const takesIds = (t: Target) => takesTokenIds(t.deployment);
    // Token arrays go to the deployments that take ids whenever the model has one: a text-only
    // deployment's decode refusal is final (not retried elsewhere), so picking one at random would
    // answer 400 for a request another deployment of the pool serves.
    const usable = tokens && this.takesTokenIds(req.model) ? takesIds : undefined;
    return this.run(
      req.model,
      opts,
      {
        operation: 'embeddings',
        request: req,
        // An OpenAI-type deployment asks in its own encoding (OpenAiCompatibleClient.embeddings).
        requestFor: (d) => (d.type === 'openai' ? { ...req, encoding_format: d.embeddingsEncoding } : req),
      },
      async (t, attempt) => {
        let input = req.input;
        if (tokens && !takesIds(t)) {
          if (!asText)
            throw new UnsupportedRequestError(
              `deployment ${t.deployment.name} (type ${t.deployment.type}) takes text input only, not token arrays`,
              'input',
            );
          input = asText(t.deployment);
        }
        const res = await attempt.run(() =>
          t.client.embeddings(
            { ...req, input, model: t.upstreamModel },
            { ...opts, timeoutMs: opts.timeoutMs ?? t.deployment.timeoutMs },
          ),
        );
        attempt.response(res);
        return { ...res, model: req.model };
      },
      usable,
    );
  }

  /** Whether an OpenAI-type deployment lists `model` (what media() can route to), asked before costly input work. */
  servesMedia(model: string): boolean {
    return this.targets(model).some((t) => t.deployment.type === 'openai');
  }

  /**
   * A media call (`/v1/moderations`) for a model the providers file's OpenAI-type deployments list:
   * `call` gets the deployment (base URL, key, headers, timeout) and the model's upstream name, with the
   * routing policy's retries, fallback and cooldown as for chat.
   */
  async media<T>(
    model: string,
    opts: CallOptions,
    call: (deployment: Deployment, upstreamModel: string) => Promise<T>,
  ): Promise<Routed<T>> {
    return this.run(
      model,
      opts,
      { operation: 'moderation' },
      (t, attempt) => attempt.run(() => call(t.deployment, t.upstreamModel)),
      (t) => t.deployment.type === 'openai',
    );
  }

  async close(): Promise<void> {
    const local = new Set(Object.values(this.opts.localEngines ?? {}));
    await Promise.all(
      [...this.clients.values()].filter((c) => !local.has(c)).map((c) => c.close().catch(() => undefined)),
    );
  }

  /** The deployments serving a public model (the config is fixed for the router's life: built once per model). */
  private targets(model: string): Target[] {
    const known = this.targetsByModel.get(model);
    if (known) return known;
    const out: Target[] = [];
    for (const d of this.config.deployments) {
      const m = d.models.find((x) => x.name === model);
      if (m && d.weight > 0)
        out.push({
          deployment: d,
          upstreamModel: m.upstream,
          client: this.clients.get(d.name)!,
          genAi: genAiTarget(d, m.upstream, model),
        });
    }
    // Only names the config serves are kept, so a caller's made-up model names cannot grow the map.
    if (out.length) this.targetsByModel.set(model, out);
    return out;
  }

  /**
   * Deployments healthy for this caller in weighted-random order, then cooling ones (soonest back first) as a
   * last resort.
   */
  private order(targets: Target[], key: string | undefined): Target[] {
    const now = this.now();
    const until = (t: Target) => this.coolingUntil(t.deployment.name, key, now);
    const healthy = targets.filter((t) => until(t) === 0);
    const cooling = targets.filter((t) => until(t) > 0).sort((a, b) => until(a) - until(b));
    const ordered: Target[] = [];
    const pool = [...healthy];
    while (pool.length) {
      const total = pool.reduce((s, t) => s + t.deployment.weight, 0);
      let r = this.random() * total;
      let i = 0;
      for (; i < pool.length - 1; i++) {
        r -= pool[i].deployment.weight;
        if (r < 0) break;
      }
      ordered.push(pool.splice(i, 1)[0]);
    }
    return [...ordered, ...cooling];
  }

  /**
   * Each attempt is a GenAiAttempt (one CLIENT span, its metrics) ended here, or for a stream when the
   * stream ends (observeStream); attempts are siblings under the caller's active span.
   */
  private async run<T>(
    model: string,
    opts: CallOptions,
    traced: Traced,
    call: (t: Target, attempt: GenAiAttempt) => Promise<T>,
    usable: (t: Target) => boolean = () => true,
  ): Promise<Routed<T>> {
    const targets = this.targets(model).filter(usable);
    if (targets.length === 0) throw new NoDeploymentError(model);
    const policy = this.config.routing;
    const order = this.order(targets, opts.key);
    let lastError: UpstreamError | undefined;
    let timedOut = false;
    let index = 0;
    for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
      if (opts.signal?.aborted) throw new CallAbortedError();
      const target = order[index % order.length];
      const request = traced.requestFor ? traced.requestFor(target.deployment) : traced.request;
      const span = new GenAiAttempt(traced.operation, target.genAi, request, attempt, this.telemetry);
      try {
        const value = await call(target, span);
        if (!span.streaming) span.end();
        if (this.cooldownUntil.delete(target.deployment.name))
          this.healthListener?.({ state: 'recovered', deployment: target.deployment.name, at: this.now() });
        if (this.suspects.get(target.deployment.name)?.key === opts.key) this.suspects.delete(target.deployment.name);
        return { value, deployment: target.deployment.name, upstreamModel: target.upstreamModel, attempts: attempt };
      } catch (e) {
        span.fail(opts.signal?.aborted ? new CallAbortedError() : e);
        span.end();
        if (e instanceof CallAbortedError || opts.signal?.aborted) throw new CallAbortedError();
        if (!(e instanceof UpstreamError)) throw e;
        lastError = e.withDeployment(target.deployment.name);
        if (!e.retryable) throw lastError;
        const retryAfter = e.retryAfterMs;
        // A call that found no free connection of its key's share (`busy`) sent nothing: the deployment is not at fault.
        if (e.kind !== 'busy') this.coolDown(target.deployment.name, opts.key, retryAfter, e);
        // After a timeout (or as long a wait for a connection) one more attempt at most, on another deployment,
        // whatever it ends with.
        if (attempt === policy.maxAttempts || timedOut) break;
        const next = order[(index + 1) % order.length];
        if (e.kind === 'timeout' || e.kind === 'busy') {
          if (next === target) break;
          timedOut = true;
        }
        const nextHealthy = next !== target && this.coolingUntil(next.deployment.name, opts.key, this.now()) === 0;
        if (nextHealthy) {
          // Another deployment is ready: fall back at once.
          index++;
          continue;
        }
        // Same deployment (or only cooling ones) left: wait as the upstream asked, or back off.
        const backoff = policy.backoffMs * 2 ** (attempt - 1) * (0.5 + this.random());
        if (retryAfter !== undefined && retryAfter > policy.maxRetryAfterMs) break;
        await sleep(retryAfter !== undefined ? Math.max(retryAfter, 1) : backoff, opts.signal);
        index++;
      }
    }
    throw lastError!;
  }

  /**
   * A deployment failed a call of `key`: it cools for that key alone, unless another key's failure is still
   * cooling it (then, and for calls without a key, it cools for everyone and the listener hears of it).
   */
  private coolDown(deployment: string, key: string | undefined, retryAfter: number | undefined, e: UpstreamError) {
    const now = this.now();
    const until = now + Math.max(this.config.routing.cooldownMs, retryAfter ?? 0);
    const wasCooling = this.isCoolingDown(deployment);
    const suspect = this.suspects.get(deployment);
    const own = !suspect || suspect.until <= now || suspect.key === key;
    if (!wasCooling && key !== undefined && own) {
      this.suspects.set(deployment, { key, until: Math.max(until, suspect?.key === key ? suspect.until : 0) });
      return;
    }
    this.suspects.delete(deployment);
    this.cooldownUntil.set(deployment, Math.max(until, this.cooldownUntil.get(deployment) ?? 0));
    if (!wasCooling)
      this.healthListener?.({
        state: 'cooled_down',
        deployment,
        at: now,
        until,
        status: e.status,
        kind: e.kind,
        message: e.message.slice(0, 300),
      });
  }
}

/** OpenAI-type upstreams take embeddings input as token ids; every other type takes text only. */
function takesTokenIds(d: Deployment): boolean {
  return d.type === 'openai';
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new CallAbortedError());
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new CallAbortedError());
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** An upstream stream under the public model name; its failures name the deployment they came from. */
async function* asPublicModel<T extends { model: string }>(
  upstream: AsyncIterable<T>,
  model: string,
  deployment: string,
): AsyncIterable<T> {
  try {
    for await (const chunk of upstream) yield { ...chunk, model };
  } catch (e) {
    throw e instanceof UpstreamError ? e.withDeployment(deployment) : e;
  }
}
