// Load generator, run as a child process of bench/run.js (fork + IPC), so the load never shares an
// event loop with the bench driver or the servers under test. Every target is on 127.0.0.1.
'use strict';
const http = require('http');
const zlib = require('zlib');
const { setMaxListeners } = require('events');
const { randomBytes } = require('crypto');
const autocannon = require('autocannon');
const { summarize } = require('./stats');

const wallNow = () => performance.timeOrigin + performance.now();
// A client address from 198.18.0.0/15 (the benchmarking range, RFC 2544), sent only as X-Forwarded-For.
const randomIp = () => {
  const b = randomBytes(3);
  return `198.${18 + (b[0] & 1)}.${b[1]}.${b[2]}`;
};

function assertLoopback(url) {
  const host = new URL(url).hostname;
  if (host !== '127.0.0.1' && host !== 'localhost' && host !== '[::1]')
    throw new Error(`refusing non-loopback target ${host}`);
}

/** An autocannon target whose timed slices add up into one result. */
function prepare(o) {
  assertLoopback(o.url);
  const base = { url: o.url, connections: o.connections || 1, pipelining: 1, timeout: 30 };
  const headers = { ...(o.headers || {}) };
  if (o.body !== undefined) headers['content-type'] = headers['content-type'] || 'application/json';
  const body = o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
  const acc = {
    samples: [],
    overhead: [],
    badBodies: 0,
    total: 0,
    seconds: 0,
    non2xx: 0,
    errors: 0,
    timeouts: 0,
    statusCodes: {},
  };
  const pool = o.refreshTokens ? [...o.refreshTokens] : null;
  const request = {
    method: o.method || 'GET',
    path: new URL(o.url).pathname,
    headers,
    body,
    setupRequest: (req) => {
      const h = { ...headers };
      if (o.randomIp) h['x-forwarded-for'] = randomIp();
      if (pool) return { ...req, headers: h, body: JSON.stringify({ refreshToken: pool.shift() }) };
      return { ...req, headers: h };
    },
  };
  if (o.overheadHeader || pool) {
    request.onResponse = (status, resBody, _ctx, resHeaders) => {
      if (acc.recording && o.overheadHeader && resHeaders) {
        const name = Object.keys(resHeaders).find((k) => k.toLowerCase() === o.overheadHeader.toLowerCase());
        const v = name === undefined ? NaN : Number(resHeaders[name]);
        if (Number.isFinite(v)) acc.overhead.push(v);
      }
      if (pool) {
        try {
          const t = JSON.parse(resBody).data.refreshToken;
          if (t) pool.push(t);
          else acc.badBodies++;
        } catch {
          acc.badBodies++;
        }
      }
    };
  }
  return {
    o,
    acc,
    /** One timed slice; `record` false for warm-up. */
    async slice(seconds, record) {
      acc.recording = record;
      const res = await runOnce(
        { ...base, duration: seconds, requests: [request], ...(o.overallRate ? { overallRate: o.overallRate } : {}) },
        record ? acc.samples : null,
      );
      if (!record) return;
      acc.total += res.requests.total;
      acc.seconds += res.duration;
      acc.non2xx += res.non2xx;
      acc.errors += res.errors;
      acc.timeouts += res.timeouts;
      for (const [code, v] of Object.entries(res.statusCodeStats || {}))
        acc.statusCodes[code] = (acc.statusCodes[code] || 0) + v.count;
    },
    result() {
      return {
        rps: acc.total / acc.seconds,
        total: acc.total,
        durationS: acc.seconds,
        non2xx: acc.non2xx,
        errors: acc.errors,
        timeouts: acc.timeouts,
        statusCodes: acc.statusCodes,
        badBodies: acc.badBodies,
        latency: summarize(acc.samples),
        overhead: acc.overhead.length ? summarize(acc.overhead) : null,
      };
    },
  };
}

/**
 * One autocannon run. Latencies are collected from autocannon's per-response event (float ms),
 * because its own histogram has 1 ms resolution. Options: url, method, headers, body, connections,
 * duration (s), warmup (s), overheadHeader (header whose values are summarized), randomIp (a fresh
 * X-Forwarded-For per request, so per-IP rate limits see many clients), refreshTokens (rotating pool),
 * overallRate (requests/s in all).
 */
async function cannon(o) {
  const p = prepare(o);
  if (o.warmup) await p.slice(o.warmup, false);
  await p.slice(o.duration, true);
  return p.result();
}

/**
 * A baseline and a measured target, alternated in `rounds` slices of duration/rounds seconds each,
 * so drift from other work on a shared machine hits both alike. Returns { a, b }.
 */
async function abCannon({ a, b, rounds = 3, duration, warmup = 0 }) {
  const pa = prepare(a);
  const pb = prepare(b);
  if (warmup) {
    await pa.slice(warmup, false);
    await pb.slice(warmup, false);
  }
  const slice = Math.max(1, Math.round(duration / rounds));
  for (let i = 0; i < rounds; i++) {
    await pa.slice(slice, true);
    await pb.slice(slice, true);
  }
  return { a: pa.result(), b: pb.result() };
}

function runOnce(opts, samples) {
  return new Promise((resolve, reject) => {
    const inst = autocannon(opts, (err, res) => (err ? reject(err) : resolve(res)));
    if (samples) inst.on('response', (_client, status, _bytes, ms) => status < 300 && samples.push(ms));
  });
}

/** Opens one SSE stream and records, per content chunk, its delivery latency and the read it came in. */
function oneStream(url, headers, body, agent, onFirstChunk) {
  return new Promise((resolve) => {
    const u = new URL(url);
    const payload = JSON.stringify(body);
    const t0 = performance.now();
    const out = {
      status: 0,
      ttfcMs: null,
      latencies: [],
      reads: 0,
      readsWithSeveral: 0,
      chunks: 0,
      done: false,
      error: null,
      overheadHeader: null,
    };
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        agent,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        out.status = res.statusCode;
        out.overheadHeader = res.headers['x-gateway-overhead-ms'] ?? null;
        res.setEncoding('utf8');
        let buf = '';
        res.on('data', (text) => {
          const recvWall = wallNow();
          const recvMono = performance.now();
          buf += text;
          const events = buf.split('\n\n');
          buf = events.pop();
          let inThisRead = 0;
          for (const ev of events) {
            const line = ev.trim();
            if (!line.startsWith('data:')) continue;
            const data = line.slice(5).trim();
            if (data === '[DONE]') {
              out.done = true;
              continue;
            }
            let content;
            try {
              const parsed = JSON.parse(data);
              content =
                parsed.choices && parsed.choices[0] && parsed.choices[0].delta && parsed.choices[0].delta.content;
            } catch {
              continue;
            }
            if (typeof content !== 'string' || !content) continue;
            const sent = parseFloat(content);
            if (out.ttfcMs === null) {
              out.ttfcMs = recvMono - t0;
              if (onFirstChunk) onFirstChunk();
            }
            if (Number.isFinite(sent)) out.latencies.push(recvWall - sent);
            out.chunks++;
            inThisRead++;
          }
          if (inThisRead > 0) {
            out.reads++;
            if (inThisRead > 1) out.readsWithSeveral++;
          }
        });
        res.on('end', () => resolve(out));
        res.on('error', (e) => {
          out.error = String(e.message || e);
          resolve(out);
        });
      },
    );
    req.on('error', (e) => {
      out.error = String(e.message || e);
      resolve(out);
    });
    req.end(payload);
  });
}

/** `count` streams one after another (warm keep-alive connection); per-chunk figures pooled. */
async function streams(o) {
  assertLoopback(o.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < (o.warmup || 0); i++) await oneStream(o.url, o.headers || {}, o.body, agent);
  const ttfc = [];
  const latencies = [];
  const overhead = [];
  let reads = 0;
  let several = 0;
  let chunks = 0;
  let failures = 0;
  for (let i = 0; i < o.count; i++) {
    const r = await oneStream(o.url, o.headers || {}, o.body, agent);
    if (r.status !== 200 || !r.done || r.error) failures++;
    if (r.ttfcMs !== null) ttfc.push(r.ttfcMs);
    latencies.push(...r.latencies);
    if (r.overheadHeader !== null && Number.isFinite(Number(r.overheadHeader))) overhead.push(Number(r.overheadHeader));
    reads += r.reads;
    several += r.readsWithSeveral;
    chunks += r.chunks;
  }
  agent.destroy();
  return {
    ttfc: summarize(ttfc),
    chunkLatency: summarize(latencies),
    chunks,
    reads,
    readsWithSeveral: several,
    failures,
    overhead: overhead.length ? summarize(overhead) : null,
  };
}

/**
 * `count` streams (one connection each), started evenly over `rampMs`; notifies 'allOpen' once every
 * stream has its first chunk; resolves when all ended or after timeoutMs.
 */
async function openStreams(o, notify) {
  assertLoopback(o.url);
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const started = performance.now();
  const all = [];
  let open = 0;
  let allOpenAtMs = null;
  const onFirst = () => {
    if (++open === o.count) {
      allOpenAtMs = performance.now() - started;
      notify('allOpen');
    }
  };
  for (let i = 0; i < o.count; i++) {
    if (o.rampMs && i > 0 && i % 50 === 0) await new Promise((r) => setTimeout(r, (o.rampMs * 50) / o.count));
    all.push(oneStream(o.url, o.headers || {}, o.body, agent, onFirst));
  }
  const timeout = new Promise((r) => setTimeout(() => r('timeout'), o.timeoutMs).unref());
  const results = await Promise.race([Promise.all(all), timeout]);
  const elapsedMs = performance.now() - started;
  agent.destroy();
  if (results === 'timeout') return { timedOut: true, elapsedMs };
  const latencies = [];
  let completed = 0;
  let chunks = 0;
  const statuses = {};
  for (const r of results) {
    statuses[r.status] = (statuses[r.status] || 0) + 1;
    if (r.status === 200 && r.done && !r.error) completed++;
    chunks += r.chunks;
    latencies.push(...r.latencies);
  }
  return { timedOut: false, elapsedMs, allOpenAtMs, completed, chunks, statuses, chunkLatency: summarize(latencies) };
}

/**
 * Raw argon2id verifications per second in this bare process, with the membership app's production
 * parameters (read from the compiled app), `parallel` at a time (libuv's default pool has 4 threads).
 */
async function argon2Rate(o) {
  const argon2 = require('argon2');
  const { ARGON2_OPTIONS } = require(
    require('path').join(__dirname, '..', '..', 'dist', 'apps', 'membership', 'src', 'security', 'password-hasher.js'),
  );
  const hash = await argon2.hash('bench-password-0123', ARGON2_OPTIONS);
  const end = performance.now() + o.durationS * 1000;
  let done = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: o.parallel }, async () => {
      while (performance.now() < end) {
        if (!(await argon2.verify(hash, 'bench-password-0123'))) throw new Error('argon2 verify failed');
        done++;
      }
    }),
  );
  return {
    perSecond: done / ((performance.now() - t0) / 1000),
    done,
    options: {
      memoryCost: ARGON2_OPTIONS.memoryCost,
      timeCost: ARGON2_OPTIONS.timeCost,
      parallelism: ARGON2_OPTIONS.parallelism,
    },
  };
}

/**
 * Sends one request (body a string or Buffer) and reads the whole answer; resolves { status, ms,
 * error, text } (text: the first 300 characters of an answer other than 2xx).
 */
function oneRequest(u, agent, { method = 'POST', headers = {}, body }, signal) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let settled = false;
    let text = '';
    const done = (status, error) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      resolve({ status, ms: performance.now() - t0, error, text });
    };
    const h = { ...headers };
    if (body !== undefined) h['content-length'] = Buffer.byteLength(body);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method, agent, headers: h }, (res) => {
      const keep = res.statusCode >= 300;
      res.on('data', (d) => {
        if (keep && text.length < 300) text = (text + d).slice(0, 300);
      });
      res.on('end', () => done(res.statusCode, null));
      res.on('error', (e) => done(res.statusCode, e.code || e.message));
      res.on('aborted', () => done(res.statusCode, 'aborted'));
    });
    const onAbort = () => {
      req.destroy();
      done(0, 'aborted');
    };
    signal?.addEventListener('abort', onAbort);
    req.on('error', (e) => done(0, e.code || e.message));
    req.end(body);
  });
}

/**
 * An open-loop client: `rate` calls a second, each sent at its scheduled time whether or not earlier
 * ones were answered, for `duration` seconds (after `warmup` seconds not recorded). A call's latency
 * counts from its scheduled time, so a server that stalls for a second shows as a second's worth of
 * slow calls (a closed loop would send nothing meanwhile and hide the stall from its percentiles).
 * Calls still open at the end are waited for (up to `drainMs`); one still open after that is recorded
 * with the time it had waited (a lower bound) and counted as unanswered. Latencies of every answer,
 * any status.
 */
async function probe(o) {
  assertLoopback(o.url);
  const u = new URL(o.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.maxSockets || 32 });
  const body = o.body === undefined ? undefined : JSON.stringify(o.body);
  const headers = { ...(o.headers || {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) };
  const run = async (seconds, record) => {
    const out = { samples: [], statusCodes: {}, answers: {}, errors: 0, unanswered: 0 };
    const drain = new AbortController();
    setMaxListeners(0, drain.signal); // one listener per open call
    const calls = [];
    const started = performance.now();
    const n = Math.max(1, Math.round(seconds * o.rate));
    const call = async (scheduled) => {
      const r = await oneRequest(u, agent, { method: 'POST', headers, body }, drain.signal);
      const ms = performance.now() - scheduled;
      if (r.error === 'aborted' && drain.signal.aborted) out.unanswered++;
      else if (r.error && !r.status) out.errors++;
      else out.statusCodes[r.status] = (out.statusCodes[r.status] || 0) + 1;
      if (r.status >= 300 && !(r.status in out.answers)) out.answers[r.status] = r.text;
      out.samples.push(ms);
    };
    for (let i = 0; i < n; i++) {
      const scheduled = started + (i * 1000) / o.rate;
      const wait = scheduled - performance.now();
      if (wait > 1) await new Promise((res) => setTimeout(res, wait));
      calls.push(call(scheduled));
    }
    const timer = setTimeout(
      () => drain.abort(),
      Math.max(0, started + seconds * 1000 - performance.now()) + (o.drainMs ?? 10_000),
    );
    await Promise.all(calls);
    clearTimeout(timer);
    out.durationS = (performance.now() - started) / 1000;
    return record ? out : null;
  };
  if (o.warmup) await run(o.warmup, false);
  const out = await run(o.duration, true);
  agent.destroy();
  const total = out.samples.length;
  const ok = out.statusCodes[200] || 0;
  return {
    rate: o.rate,
    total,
    ok,
    notOk: total - ok,
    statusCodes: out.statusCodes,
    answers: out.answers,
    errors: out.errors,
    unanswered: out.unanswered,
    durationS: out.durationS,
    latency: summarize(out.samples),
  };
}

const attacks = new Map();

/** A gzip body that inflates to `{"a":[{},{},...]}` of at most `inflatedBytes` bytes. */
function emptyObjectsGzip(inflatedBytes) {
  const n = Math.floor((inflatedBytes - 8) / 3);
  const json = `{"a":[${'{},'.repeat(n - 1)}{}]}`;
  return { body: zlib.gzipSync(json, { level: 9 }), inflated: json.length };
}

/** Request bodies of an attack: the same one every time, or fresh embeddings inputs for each call. */
function attackBodies(o) {
  if (o.body.kind === 'json') {
    const fixed = JSON.stringify(o.body.value);
    return { next: () => fixed, info: { bytes: Buffer.byteLength(fixed) } };
  }
  if (o.body.kind === 'gzipEmptyObjects') {
    const { body, inflated } = emptyObjectsGzip(o.body.inflatedBytes);
    return { next: () => body, info: { bytes: body.length, inflatedBytes: inflated } };
  }
  if (o.body.kind === 'freshEmbeddings') {
    const tag = randomBytes(4).toString('hex');
    let call = 0;
    return {
      next: () => {
        const c = call++;
        const input = Array.from({ length: o.body.inputs }, (_, i) => `w${tag} ${c} ${i}`);
        return JSON.stringify({
          model: o.body.model,
          input,
          ...(o.body.encodingFormat ? { encoding_format: o.body.encodingFormat } : {}),
        });
      },
      info: { inputsPerCall: o.body.inputs },
    };
  }
  throw new Error(`unknown attack body ${o.body.kind}`);
}

/**
 * Abuse traffic until `stopAttack` names it (or `maxMs` passes): `connections` callers in a closed
 * loop, each sending its next call as soon as the previous one is answered, which is as fast as a
 * client without a rate limit can go. Notifies 'started' when the calls begin. At the stop, calls still open are aborted (the socket is
 * destroyed) and counted as such. Resolves with what was sent and how it was answered.
 */
async function attack(o, notify) {
  assertLoopback(o.url);
  if (attacks.has(o.name)) throw new Error(`attack ${o.name} already running`);
  const u = new URL(o.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.connections });
  const bodies = attackBodies(o);
  const stop = new AbortController();
  setMaxListeners(0, stop.signal); // one listener per open call
  attacks.set(o.name, stop);
  const maxTimer = setTimeout(() => stop.abort(), o.maxMs ?? 120_000);
  const out = { sent: 0, answered: 0, statusCodes: {}, answers: {}, errors: {}, abortedAtStop: 0, latency: null };
  const samples = [];
  const t0 = performance.now();
  const headers = { 'content-type': 'application/json', ...(o.headers || {}) };
  notify('started'); // bodies are ready (a gzip body takes a moment to make): the calls start now
  await Promise.all(
    Array.from({ length: o.connections }, async () => {
      while (!stop.signal.aborted) {
        const h = o.randomIp ? { ...headers, 'x-forwarded-for': randomIp() } : headers;
        out.sent++;
        const r = await oneRequest(u, agent, { method: 'POST', headers: h, body: bodies.next() }, stop.signal);
        if (r.error === 'aborted' && stop.signal.aborted) {
          out.abortedAtStop++;
          break;
        }
        if (r.status) {
          out.answered++;
          out.statusCodes[r.status] = (out.statusCodes[r.status] || 0) + 1;
          if (r.status >= 300 && !(r.status in out.answers)) out.answers[r.status] = r.text;
          samples.push(r.ms);
        } else {
          out.errors[r.error] = (out.errors[r.error] || 0) + 1;
          // a refused or reset connection: no busy loop against a server that is down
          await new Promise((res) => setTimeout(res, 20));
        }
      }
    }),
  );
  clearTimeout(maxTimer);
  attacks.delete(o.name);
  agent.destroy();
  out.durationS = (performance.now() - t0) / 1000;
  out.latency = summarize(samples);
  out.body = bodies.info;
  return out;
}

/** Stops the attack `name` (its calls in flight are aborted); the attack's own run then resolves. */
async function stopAttack(o) {
  const a = attacks.get(o.name);
  if (a) a.abort();
  return { stopped: Boolean(a) };
}

const handlers = { cannon, abCannon, streams, openStreams, argon2Rate, probe, attack, stopAttack };
process.on('message', async (msg) => {
  try {
    const result = await handlers[msg.kind](msg.opts, (event) => process.send({ id: msg.id, event }));
    process.send({ id: msg.id, result });
  } catch (e) {
    process.send({ id: msg.id, error: String((e && e.stack) || e) });
  }
});
process.on('disconnect', () => process.exit(0));
