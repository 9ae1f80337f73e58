// Loads and validates the providers file (AI_PROVIDERS_FILE, YAML or JSON) into deployments and a model catalog.
import { readFileSync } from 'fs';
import * as yaml from 'js-yaml';
import { defaultConnectionsPerKey } from './pool-shares';
import {
  catalogEntry,
  DEFAULT_MODELS,
  emptyCatalog,
  MediaModelInfo,
  mergeMediaModels,
  ModelInfo,
  ModelKind,
} from './catalog';

export type DeploymentType = 'openai' | 'anthropic' | 'local';

export interface DeploymentModel {
  /** Public model name clients send. */
  name: string;
  /** Model name sent upstream (defaults to the public name). */
  upstream: string;
}

export interface Deployment {
  name: string;
  type: DeploymentType;
  /** Base URL including the version path, e.g. https://api.openai.com/v1. Not used by `local`. */
  baseUrl?: string;
  /** Resolved API key (read from the environment variable named by `apiKeyEnv`); never logged. */
  apiKey?: string;
  apiKeyEnv?: string;
  /** For `local`: name of the in-process engine. */
  engine?: string;
  weight: number;
  timeoutMs: number;
  /** Max concurrent connections of the keep-alive pool. */
  connections: number;
  /** Of those, at most this many for one API key's calls at once (default: all but a quarter of them). */
  connectionsPerKey: number;
  headers: Record<string, string>;
  models: DeploymentModel[];
  /** Anthropic only: API version header. */
  anthropicVersion?: string;
  /** OpenAI type: ask for usage in streams (`stream_options.include_usage`); off for servers that refuse it. */
  streamUsage: boolean;
  /**
   * OpenAI type: the one request field that carries the completion limit upstream. OpenAI itself
   * honours `max_completion_tokens` (reasoning models refuse `max_tokens`, and both at once is a 400);
   * most compatible servers (vLLM, DeepSeek, DashScope, Ollama, llama.cpp) honour `max_tokens`.
   * Default: `max_completion_tokens` for api.openai.com and Azure OpenAI hosts, `max_tokens` otherwise.
   */
  completionLimitParam: CompletionLimitParam;
  /**
   * OpenAI type: what happens to top-level chat fields the gateway does not know (KNOWN_CHAT_FIELDS in
   * types.ts): `forward` (default; the upstream may know newer fields) or `drop` (for upstreams that
   * refuse unknown fields). Anthropic deployments never receive them (the translation builds the request).
   */
  unknownFields: UnknownFieldsPolicy;
  /**
   * OpenAI type: the `encoding_format` the gateway asks for embeddings, whatever its caller asked (the
   * gateway answers the caller's format itself). `base64` (float32, little-endian) is about a quarter of
   * the bytes of `float` and parses several times faster: a 2048-input answer of a 1536-dimension model is
   * ~17 MB to parse instead of ~65 MB. Only servers that accept base64 may be set to it (DashScope's
   * compatible mode documents `float` only). Default: `base64` for api.openai.com and Azure OpenAI hosts
   * (the official SDKs ask for it), `float` otherwise. An answer in the other form is read as well.
   */
  embeddingsEncoding: EmbeddingsEncoding;
}

export type EmbeddingsEncoding = 'float' | 'base64';

/** The embeddings encoding an OpenAI-type upstream at `baseUrl` is asked for when the file names none. */
export function defaultEmbeddingsEncoding(baseUrl: string | undefined): EmbeddingsEncoding {
  return baseUrl && isOpenAiHost(baseUrl) ? 'base64' : 'float';
}

export type UnknownFieldsPolicy = 'forward' | 'drop';

export type CompletionLimitParam = 'max_tokens' | 'max_completion_tokens';

/** The completion-limit field an OpenAI-type upstream at `baseUrl` honours when the file names none. */
export function defaultCompletionLimitParam(baseUrl: string | undefined): CompletionLimitParam {
  return baseUrl && isOpenAiHost(baseUrl) ? 'max_completion_tokens' : 'max_tokens';
}

/** OpenAI's own API: api.openai.com or an Azure OpenAI host. */
function isOpenAiHost(baseUrl: string): boolean {
  const host = new URL(baseUrl).hostname.toLowerCase();
  return host === 'api.openai.com' || host.endsWith('.openai.azure.com');
}

export interface RoutingPolicy {
  /** Attempts per request across all deployments (first try included). */
  maxAttempts: number;
  /** Base backoff between attempts; doubles each time, with jitter. */
  backoffMs: number;
  /** Longest wait honoured from an upstream Retry-After before moving on to another deployment. */
  maxRetryAfterMs: number;
  /** How long a deployment is skipped after it failed. */
  cooldownMs: number;
}

export interface ProvidersConfig {
  deployments: Deployment[];
  models: Record<string, ModelInfo>;
  /** Transcription, image and moderation models (`mediaModels:`, merged over DEFAULT_MEDIA_MODELS). */
  mediaModels: Record<string, MediaModelInfo>;
  routing: RoutingPolicy;
}

export class ProvidersFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProvidersFileError';
  }
}

const DEFAULT_ROUTING: RoutingPolicy = { maxAttempts: 3, backoffMs: 200, maxRetryAfterMs: 5000, cooldownMs: 30_000 };
const TYPES: DeploymentType[] = ['openai', 'anthropic', 'local'];

export function loadProvidersFile(path: string, env: NodeJS.ProcessEnv = process.env): ProvidersConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ProvidersFileError(`cannot read providers file ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = /\.json$/i.test(path) ? JSON.parse(text) : yaml.load(text);
  } catch (e) {
    throw new ProvidersFileError(
      `providers file ${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${(e as Error).message}`,
    );
  }
  return parseProvidersConfig(raw, env);
}

/** Validates an already-parsed providers document. Every error names the offending path. */
export function parseProvidersConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env): ProvidersConfig {
  if (raw == null) raw = {};
  if (!isObject(raw)) throw new ProvidersFileError('providers file: top level must be an object');
  const routing = { ...DEFAULT_ROUTING };
  if (raw.routing !== undefined) {
    const r = expectObject(raw.routing, 'routing');
    for (const key of Object.keys(DEFAULT_ROUTING) as (keyof RoutingPolicy)[]) {
      if (r[key] !== undefined) routing[key] = expectNumber(r[key], `routing.${key}`, key === 'maxAttempts' ? 1 : 0);
    }
  }

  const models = emptyCatalog<ModelInfo>();
  for (const [name, info] of Object.entries(DEFAULT_MODELS)) models[name] = { ...info, price: { ...info.price } };
  if (raw.models !== undefined) {
    const m = expectObject(raw.models, 'models');
    for (const [name, value] of Object.entries(m)) {
      const path = `models.${name}`;
      const o = expectObject(value ?? {}, path);
      const base = catalogEntry(models, name);
      const kind = (o.kind ?? base?.kind) as ModelKind;
      if (kind !== 'chat' && kind !== 'embeddings')
        throw new ProvidersFileError(`${path}.kind must be chat or embeddings`);
      const price = o.price === undefined ? undefined : expectObject(o.price, `${path}.price`);
      models[name] = {
        name,
        kind,
        contextLength:
          o.contextLength !== undefined
            ? expectNumber(o.contextLength, `${path}.contextLength`, 1)
            : (base?.contextLength ?? (kind === 'chat' ? 8192 : 8192)),
        dimensions: o.dimensions !== undefined ? expectNumber(o.dimensions, `${path}.dimensions`, 1) : base?.dimensions,
        encoding:
          o.encoding !== undefined
            ? expectEnum(o.encoding, `${path}.encoding`, ['cl100k_base', 'o200k_base'] as const)
            : (base?.encoding ?? 'cl100k_base'),
        price: {
          inputPer1k:
            price?.inputPer1k !== undefined
              ? expectNumber(price.inputPer1k, `${path}.price.inputPer1k`, 0)
              : (base?.price.inputPer1k ?? 0),
          outputPer1k:
            price?.outputPer1k !== undefined
              ? expectNumber(price.outputPer1k, `${path}.price.outputPer1k`, 0)
              : (base?.price.outputPer1k ?? 0),
          ...optionalPrices(price, base?.price, path, kind),
        },
        ownedBy: o.ownedBy !== undefined ? expectString(o.ownedBy, `${path}.ownedBy`) : (base?.ownedBy ?? 'gateway'),
        imageTokens:
          o.imageTokens !== undefined ? imageTokensOf(o.imageTokens, `${path}.imageTokens`) : base?.imageTokens,
      };
    }
  }

  const mediaModels = mergeMediaModels(
    raw.mediaModels,
    (message) => new ProvidersFileError(`providers file: ${message}`),
  );
  const deployments: Deployment[] = [];
  const list = raw.deployments ?? [];
  if (!Array.isArray(list)) throw new ProvidersFileError('deployments must be a list');
  list.forEach((value, i) => {
    const path = `deployments[${i}]`;
    const d = expectObject(value, path);
    const name = expectString(d.name, `${path}.name`);
    if (deployments.some((x) => x.name === name)) throw new ProvidersFileError(`${path}.name "${name}" is used twice`);
    const type = expectEnum(d.type, `${path}.type`, TYPES);
    let baseUrl: string | undefined;
    if (type !== 'local') {
      baseUrl = interpolate(expectString(d.baseUrl, `${path}.baseUrl`), env, `${path}.baseUrl`).replace(/\/+$/, '');
      try {
        const u = new URL(baseUrl);
        if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
      } catch {
        throw new ProvidersFileError(`${path}.baseUrl must be an http(s) URL`);
      }
    }
    let apiKey: string | undefined;
    const apiKeyEnv = d.apiKeyEnv === undefined ? undefined : expectString(d.apiKeyEnv, `${path}.apiKeyEnv`);
    if (apiKeyEnv) {
      apiKey = envValue(env, apiKeyEnv);
      if (!apiKey) throw new ProvidersFileError(`${path}.apiKeyEnv: environment variable ${apiKeyEnv} is not set`);
    }
    if (d.apiKey !== undefined)
      throw new ProvidersFileError(`${path}.apiKey: put keys in the environment and name the variable in apiKeyEnv`);
    const headers: Record<string, string> = {};
    if (d.headers !== undefined) {
      for (const [k, v] of Object.entries(expectObject(d.headers, `${path}.headers`)))
        headers[k] = interpolate(expectString(v, `${path}.headers.${k}`), env, `${path}.headers.${k}`);
    }
    const modelList = d.models;
    if (!Array.isArray(modelList) || modelList.length === 0)
      throw new ProvidersFileError(`${path}.models must be a non-empty list`);
    const dm: DeploymentModel[] = modelList.map((m, j) => {
      const mp = `${path}.models[${j}]`;
      if (typeof m === 'string') return { name: m, upstream: m };
      const o = expectObject(m, mp);
      const publicName = expectString(o.name, `${mp}.name`);
      return {
        name: publicName,
        upstream: o.upstream === undefined ? publicName : expectString(o.upstream, `${mp}.upstream`),
      };
    });
    for (const m of dm) {
      // Moderation models (mediaModels kind moderation) are served by OpenAI-type deployments: /v1/moderations is forwarded as it is.
      if (catalogEntry(mediaModels, m.name)?.kind === 'moderation' && !catalogEntry(models, m.name)) {
        if (type !== 'openai')
          throw new ProvidersFileError(
            `${path}: moderation model "${m.name}" can be served by openai deployments only`,
          );
        continue;
      }
      if (!catalogEntry(models, m.name))
        throw new ProvidersFileError(
          `${path}: model "${m.name}" is not in the catalog; declare it under models: with its kind`,
        );
    }
    const connections = d.connections === undefined ? 32 : expectNumber(d.connections, `${path}.connections`, 1);
    deployments.push({
      name,
      type,
      baseUrl,
      apiKey,
      apiKeyEnv,
      engine: type === 'local' ? expectString(d.engine ?? name, `${path}.engine`) : undefined,
      weight: d.weight === undefined ? 1 : expectNumber(d.weight, `${path}.weight`, 0),
      timeoutMs: d.timeoutMs === undefined ? 60_000 : expectNumber(d.timeoutMs, `${path}.timeoutMs`, 1),
      connections,
      connectionsPerKey:
        d.connectionsPerKey === undefined
          ? defaultConnectionsPerKey(connections)
          : Math.min(connections, expectNumber(d.connectionsPerKey, `${path}.connectionsPerKey`, 1)),
      headers,
      models: dm,
      streamUsage: d.streamUsage === undefined ? true : expectBoolean(d.streamUsage, `${path}.streamUsage`),
      completionLimitParam: completionLimitParamOf(d.completionLimitParam, baseUrl, `${path}.completionLimitParam`),
      unknownFields:
        d.unknownFields === undefined
          ? 'forward'
          : expectEnum(d.unknownFields, `${path}.unknownFields`, ['forward', 'drop'] as const),
      embeddingsEncoding:
        d.embeddingsEncoding === undefined
          ? defaultEmbeddingsEncoding(baseUrl)
          : expectEnum(d.embeddingsEncoding, `${path}.embeddingsEncoding`, ['float', 'base64'] as const),
      anthropicVersion:
        type === 'anthropic'
          ? d.anthropicVersion === undefined
            ? '2023-06-01'
            : expectString(d.anthropicVersion, `${path}.anthropicVersion`)
          : undefined,
    });
  });
  return { deployments, models, mediaModels, routing };
}

/** The chat prices a model may declare besides its token prices: audio tokens and web search calls (see ModelPrice). */
const OPTIONAL_PRICES = ['audioInputPer1k', 'audioOutputPer1k', 'webSearchPerCall'] as const;

function optionalPrices(
  price: Record<string, unknown> | undefined,
  base: ModelInfo['price'] | undefined,
  path: string,
  kind: ModelKind,
): Partial<ModelInfo['price']> {
  const out: Partial<ModelInfo['price']> = {};
  for (const name of OPTIONAL_PRICES) {
    if (price?.[name] !== undefined) {
      if (kind !== 'chat') throw new ProvidersFileError(`${path}.price.${name} is for chat models only`);
      out[name] = expectNumber(price[name], `${path}.price.${name}`, 0);
    } else if (base?.[name] !== undefined) out[name] = base[name];
  }
  return out;
}

function imageTokensOf(value: unknown, path: string): { base: number; tile: number } {
  const o = expectObject(value, path);
  return { base: expectNumber(o.base, `${path}.base`, 0), tile: expectNumber(o.tile, `${path}.tile`, 0) };
}

function completionLimitParamOf(value: unknown, baseUrl: string | undefined, path: string): CompletionLimitParam {
  if (value === undefined) return defaultCompletionLimitParam(baseUrl);
  if (value === 'max_tokens' || value === 'max_completion_tokens') return value;
  throw new ProvidersFileError(`${path} must be max_tokens or max_completion_tokens`);
}

function interpolate(value: string, env: NodeJS.ProcessEnv, path: string): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const v = envValue(env, name);
    if (v === undefined) throw new ProvidersFileError(`${path}: environment variable ${name} is not set`);
    return v;
  });
}

/** An environment variable, own entries only: `constructor` or `toString` is unset, not Object's member (process.env has a prototype). */
function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  return Object.hasOwn(env, name) ? env[name] : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function expectObject(v: unknown, path: string): Record<string, unknown> {
  if (!isObject(v)) throw new ProvidersFileError(`${path} must be an object`);
  return v;
}
function expectString(v: unknown, path: string): string {
  if (typeof v !== 'string' || v.trim() === '') throw new ProvidersFileError(`${path} must be a non-empty string`);
  return v;
}
function expectNumber(v: unknown, path: string, min: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min)
    throw new ProvidersFileError(`${path} must be a number >= ${min}`);
  return v;
}
function expectBoolean(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw new ProvidersFileError(`${path} must be true or false`);
  return v;
}
function expectEnum<T extends string>(v: unknown, path: string, allowed: readonly T[]): T {
  if (typeof v !== 'string' || !allowed.includes(v as T))
    throw new ProvidersFileError(`${path} must be one of ${allowed.join(', ')}`);
  return v as T;
}
