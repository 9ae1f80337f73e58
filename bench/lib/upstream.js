// An OpenAI-protocol upstream that answers at once, run as its own process by the bench.
// POST /v1/chat/completions: a fixed completion, or with `stream: true` a stream whose size and pace
// come from the last user message "bench-stream <chunks> <intervalMs>"; every content chunk carries
// the wall-clock time it was written ("<epochMs> "), so a client on this machine can measure how long
// each chunk took to reach it. POST /v1/embeddings: fixed 8-dim vectors (1536-dim, float or
// base64 as asked, for the model bench-embed-large). Listens on 127.0.0.1:0 and
// prints {"port":N} on stdout.
'use strict';
const http = require('http');

const now = () => (performance.timeOrigin + performance.now()).toFixed(3);
const COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1732240000,
  model: 'bench-model',
  choices: [
    { index: 0, message: { role: 'assistant', content: 'Hello from the bench upstream.' }, finish_reason: 'stop' },
  ],
  usage: { prompt_tokens: 8, completion_tokens: 6, total_tokens: 14 },
});

function readBody(req, cb) {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    let body = {};
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}');
    } catch {
      body = {};
    }
    cb(body);
  });
}

function chunk(delta, finish) {
  return `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1732240000, model: 'bench-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

function stream(req, res, body) {
  const last = (body.messages || []).filter((m) => m && m.role === 'user').pop();
  const m = /bench-stream (\d+) (\d+)/.exec((last && typeof last.content === 'string' && last.content) || '');
  const chunks = m ? Math.min(Number(m[1]), 100000) : 3;
  const interval = m ? Number(m[2]) : 0;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.socket?.setNoDelay(true);
  let i = 0;
  let closed = false;
  res.on('close', () => (closed = true));
  const next = () => {
    if (closed) return;
    if (i < chunks) {
      res.write(chunk(i === 0 ? { role: 'assistant', content: `${now()} ` } : { content: `${now()} ` }, null));
      i++;
      if (interval > 0) setTimeout(next, interval);
      else setImmediate(next);
      return;
    }
    res.write(chunk({}, 'stop'));
    if (body.stream_options && body.stream_options.include_usage) {
      res.write(
        `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1732240000, model: 'bench-model', choices: [], usage: { prompt_tokens: 8, completion_tokens: chunks, total_tokens: 8 + chunks } })}\n\n`,
      );
    }
    res.end('data: [DONE]\n\n');
  };
  next();
}

const SMALL = JSON.stringify([0.5, 0.5, 0.5, 0.5, 0, 0, 0, 0]);
const LARGE = Float32Array.from({ length: 1536 }, (_, i) => Math.sin(i) / 3);
const LARGE_FLOATS = JSON.stringify(Array.from(LARGE));
const LARGE_BASE64 = JSON.stringify(Buffer.from(LARGE.buffer).toString('base64'));

/**
 * An embeddings answer's bytes, built once for each model, encoding and number of inputs (the answer depends on
 * nothing else): a 17 MB answer of 2048 x 1536 base64 vectors took this process ~40 ms of a core each time, on
 * the two cores the gateway under test shares with it, which a provider's servers do not.
 */
const answers = new Map();
let answersBytes = 0;
function embeddingsAnswer(model, base64, count) {
  const key = `${model}|${base64}|${count}`;
  let answer = answers.get(key);
  if (!answer) {
    // bench-embed-large: vectors of OpenAI's size (1536 floats), in the encoding asked.
    const large = model === 'bench-embed-large';
    const vector = large ? (base64 ? LARGE_BASE64 : LARGE_FLOATS) : SMALL;
    const parts = Array.from(
      { length: count },
      (_, index) => `{"object":"embedding","index":${index},"embedding":${vector}}`,
    );
    answer = Buffer.from(
      `{"object":"list","model":${JSON.stringify(model)},"data":[${parts.join(',')}],"usage":{"prompt_tokens":${count},"total_tokens":${count}}}`,
    );
    // At most ~256 MB kept (an answer of 2048 x 1536 float vectors is ~65 MB).
    if ((answersBytes += answer.length) > 256 * 2 ** 20) {
      answers.clear();
      answersBytes = answer.length;
    }
    answers.set(key, answer);
  }
  return answer;
}

const server = http.createServer((req, res) => {
  readBody(req, (body) => {
    if (req.method === 'POST' && req.url === '/v1/chat/completions') {
      if (body.stream) return stream(req, res, body);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(COMPLETION) });
      return res.end(COMPLETION);
    }
    if (req.method === 'POST' && req.url === '/v1/embeddings') {
      const inputs = Array.isArray(body.input) ? body.input : [body.input];
      const answer = embeddingsAnswer(String(body.model), body.encoding_format === 'base64', inputs.length);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
      return res.end(answer);
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"not found","type":"invalid_request_error"}}');
  });
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 61_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on('SIGTERM', () => process.exit(0));
