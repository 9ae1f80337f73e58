// OpenTelemetry tracing: a child process calls startTracing() before loading http and pg (as main.ts
// does); spans for the incoming request, its database query and its upstream fetch must reach a
// real OTLP/HTTP receiver, in one trace, with sensitive query values redacted.
import { ChildProcess, spawn } from 'child_process';
import { once } from 'events';
import * as path from 'path';
import { OtlpReceiver, ReceivedSpan, startOtlpReceiver } from './otlp-receiver';

const root = path.resolve(__dirname, '..', '..');
const SERVER = 2;
const CLIENT = 3;
// The e2e globalSetup's server (DATABASE_URL in CI, else an embedded one).
const databaseUrl = () => process.env.TEST_SERVER_URL || process.env.DATABASE_URL || '';

function startFixture(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'fixtures', 'traced-server.ts')],
    {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'test',
        DATABASE_URL: databaseUrl(),
        TS_NODE_PROJECT: path.join(root, 'tsconfig.json'),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fixture did not start in 30 s: ${err}`)), 30000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`fixture exited with ${code}: ${err}`));
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve({ child, url: `http://127.0.0.1:${JSON.parse(line).port}`, stderr: () => err });
      }
    });
  });
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
  const [code] = await exited;
  clearTimeout(timer);
  return code as number | null;
}

const isDbSpan = (s: ReceivedSpan) =>
  s.attributes['db.system'] === 'postgresql' || s.attributes['db.system.name'] === 'postgresql';
const isHttpClientSpan = (s: ReceivedSpan) => s.kind === CLIENT && typeof s.attributes['url.full'] === 'string';
const isQuerySpan = (s: ReceivedSpan) => isDbSpan(s) && s.name.startsWith('pg.query');

describe('OpenTelemetry tracing (startTracing)', () => {
  let receiver: OtlpReceiver;
  let fixture: Awaited<ReturnType<typeof startFixture>> | undefined;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterEach(async () => {
    if (fixture) await stop(fixture.child);
    fixture = undefined;
  });
  afterAll(async () => {
    await receiver.close();
  });

  it('exports spans for an incoming request, its pg query and its upstream fetch in one trace', async () => {
    fixture = await startFixture({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' });
    const res = await fetch(`${fixture.url}/work?code=s3cr3t-code&page=2`, {
      headers: { 'x-request-id': 'req-trace-1' },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ answer: 42, upstream: { upstream: true } });

    const spans = await receiver.waitFor((all) => {
      const server = all.find(
        (s) =>
          s.kind === SERVER &&
          String(s.attributes['url.path'] ?? s.attributes['http.target'] ?? '').startsWith('/work'),
      );
      return (
        !!server &&
        all.some((s) => s.traceId === server.traceId && isQuerySpan(s)) &&
        all.some((s) => s.traceId === server.traceId && isHttpClientSpan(s))
      );
    });
    const server = spans.find(
      (s) => s.kind === SERVER && String(s.attributes['url.path'] ?? s.attributes['http.target']).startsWith('/work'),
    )!;
    expect(server.service).toBe('tracing-fixture');
    expect(server.parentSpanId).toBeUndefined();

    const db = spans.find((s) => s.traceId === server.traceId && isQuerySpan(s))!;
    expect(db.parentSpanId).toBe(server.spanId);
    expect(JSON.stringify(db.attributes)).toContain('SELECT 41 + 1');

    // The upstream call: a client span under the request, and the upstream's server span under it.
    const client = spans.find((s) => s.traceId === server.traceId && isHttpClientSpan(s))!;
    expect(client.parentSpanId).toBe(server.spanId);
    expect(String(client.attributes['url.full'])).toContain('/upstream');
    const upstreamServer = await receiver.waitFor((all) =>
      all.some((s) => s.kind === SERVER && s.parentSpanId === client.spanId),
    );
    expect(upstreamServer.find((s) => s.parentSpanId === client.spanId)!.traceId).toBe(server.traceId);

    // Secrets in the query string never reach the collector; harmless parameters do.
    const everything = JSON.stringify(spans);
    expect(everything).not.toContain('s3cr3t-code');
    expect(everything).not.toContain('topsecret-1');
    expect(String(client.attributes['url.full'])).toMatch(/appid=wx123&secret=REDACTED/);
    expect(everything).toContain('REDACTED');
    expect(everything).toContain('page=2');
    expect(server.attributes['http.request.header.x-request-id']).toEqual(['req-trace-1']);
  });

  it('does not trace probe or scrape requests, and flushes on shutdown', async () => {
    fixture = await startFixture({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '60000' });
    const before = receiver.spans.length;
    expect((await fetch(`${fixture.url}/actuator/health`)).status).toBe(200);
    expect((await fetch(`${fixture.url}/nowhere`)).status).toBe(404);
    // A QR login state in the path (exchangeable for a login) is redacted, as in the access log.
    expect((await fetch(`${fixture.url}/api/v1/app/oauth2/qrcode/state/qr-state-s3cr3t`)).status).toBe(404);
    // With a 60 s batch delay nothing is sent until the SIGTERM handler flushes.
    expect(await stop(fixture.child)).toBe(0);
    fixture = undefined;
    const spans = receiver.spans.slice(before);
    const servers = spans.filter((s) => s.kind === SERVER);
    expect(servers.map((s) => String(s.attributes['url.path'] ?? s.attributes['http.target']))).toEqual([
      '/nowhere',
      '/api/v1/app/oauth2/qrcode/state/[redacted]',
    ]);
    expect(JSON.stringify(spans)).not.toContain('qr-state-s3cr3t');
    // Tracing is suppressed for the whole ignored request, its health query included.
    expect(spans.filter(isDbSpan)).toEqual([]);
  });

  it('is off when no endpoint is configured: the fixture refuses to run untraced', async () => {
    await expect(startFixture({})).rejects.toThrow(/tracing did not start/);
  });
});
