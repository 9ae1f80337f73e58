// The container, without a Docker engine: the runtime stage's files are assembled exactly as the
// Dockerfile says (test/deploy/image-layout.ts), then run with the image's ENTRYPOINT, ENV and
// HEALTHCHECK against a fresh database: `migrate`, then each app in production mode. Checks that the
// image needs no TypeScript sources or dev dependencies, that migrations run from it, that the
// HEALTHCHECK command reports the app, that OpenTelemetry spans (incoming request + pg query) reach
// an OTLP receiver from the real app, and that SIGTERM drains and exits 0.
import { ChildProcess, spawn } from 'child_process';
import { generateKeyPairSync } from 'crypto';
import { once } from 'events';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { createTestDatabase, sqlClient } from '../support/database';
import { root } from './deploy-files';
import { devOnlyPackages, packageOf, SimulatedImage, simulateImage } from './image-layout';
import { OtlpReceiver, ReceivedSpan, startOtlpReceiver } from './otlp-receiver';
import { startFakeOpenAi } from '../support/upstreams';
import { freePort } from '../support/free-port';

jest.setTimeout(180_000);

const SERVER = 2;

interface Run {
  child: ChildProcess;
  output: () => string;
}

describe('container image (Dockerfile runtime stage, run without Docker)', () => {
  let work: string;
  let image: SimulatedImage;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let receiver: OtlpReceiver;
  const running: ChildProcess[] = [];

  /** `docker run` of the simulated image: ENTRYPOINT + args, image ENV overlaid by `env`. */
  function dockerRun(args: string[], env: Record<string, string>): Run {
    const recorder = path.join(work, 'record-modules.js');
    const child = spawn(process.execPath, [...image.entrypoint.slice(1), ...args], {
      cwd: image.appDir,
      env: {
        PATH: process.env.PATH,
        ...image.env,
        TMPDIR: path.join(work, 'tmp'),
        NODE_OPTIONS: `${image.env.NODE_OPTIONS ?? ''} --require ${recorder}`,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    running.push(child);
    return { child, output: () => out };
  }

  async function exitOf(run: Run, timeoutMs = 60_000): Promise<number | null> {
    if (run.child.exitCode !== null) return run.child.exitCode;
    const timer = setTimeout(() => run.child.kill('SIGKILL'), timeoutMs);
    const [code] = await once(run.child, 'exit');
    clearTimeout(timer);
    return code as number | null;
  }

  /** The image's HEALTHCHECK command, as Docker runs it: a second process in the same container. */
  async function healthcheck(env: Record<string, string>): Promise<number | null> {
    const cmd = image.healthcheck;
    const child = spawn(cmd[0] === 'node' ? process.execPath : cmd[0], cmd.slice(1), {
      cwd: image.appDir,
      env: { PATH: process.env.PATH, ...image.env, TMPDIR: path.join(work, 'tmp'), ...env },
      stdio: 'ignore',
    });
    const [code] = await once(child, 'exit');
    return code as number | null;
  }

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'image-'));
    fs.mkdirSync(path.join(work, 'tmp'));
    // Records every file the process loaded (to check them against the dev-only packages).
    fs.writeFileSync(
      path.join(work, 'record-modules.js'),
      `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(path.join(work, 'loaded-'))} + process.pid + '.json', JSON.stringify(Object.keys(require.cache))));\n`,
    );
    image = simulateImage(root, path.join(work, 'stages'));
    db = await createTestDatabase();
    receiver = await startOtlpReceiver();
  });

  afterAll(async () => {
    for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await receiver?.close();
    await db?.drop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('holds compiled code and production dependencies only: no TypeScript sources, no dev packages', () => {
    expect(fs.existsSync(path.join(image.appDir, 'dist', 'apps', 'membership', 'src', 'main.js'))).toBe(true);
    expect(fs.existsSync(path.join(image.appDir, 'dist', 'apps', 'ai-gateway', 'src', 'main.js'))).toBe(true);
    // The web app (the account page) is built into dist/web; its sources stay out.
    expect(fs.existsSync(path.join(image.appDir, 'dist', 'web', 'index.html'))).toBe(true);
    expect(fs.existsSync(path.join(image.appDir, 'web'))).toBe(false);
    expect(fs.existsSync(path.join(image.appDir, 'apps'))).toBe(false);
    expect(fs.existsSync(path.join(image.appDir, 'libs'))).toBe(false);
    expect(fs.existsSync(path.join(image.appDir, 'test'))).toBe(false);
    expect(image.productionOnlyStages.length).toBe(1);
    expect(image.env).toEqual(expect.objectContaining({ NODE_ENV: 'production', HOST: '0.0.0.0', DATA_DIR: '/data' }));
  });

  /** `docker run image <app>` and wait until the image's HEALTHCHECK passes. */
  async function startHealthy(app: 'membership' | 'ai-gateway', env: Record<string, string>): Promise<Run> {
    fs.rmSync(path.join(work, 'tmp', '.container-app'), { force: true });
    const run = dockerRun([app], env);
    const deadline = Date.now() + 90_000;
    while ((await healthcheck(env)) !== 0) {
      if (run.child.exitCode !== null || Date.now() > deadline)
        throw new Error(`${app} did not become healthy:\n${run.output()}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    return run;
  }

  const ACCESS_TOKEN_KEYS = JSON.stringify({
    keys: [generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })],
  });
  const commonEnv = () => ({
    DATABASE_URL: db.url,
    DATA_DIR: path.join(work, 'data'),
    HOST: '127.0.0.1', // the image listens on 0.0.0.0; tests stay on loopback
    LOG_LEVEL: 'warn',
    JWT_SECRET: 'container-test-secret-0123456789abcdef',
    ADMIN_TOKEN: 'container-test-admin-token',
    // Production refuses the development SMS sender (as the ConfigMap and compose file configure).
    SMS_PROVIDER: 'aliyun',
    ALIYUN_SMS_ACCESS_KEY_ID: 'test-key-id',
    ALIYUN_SMS_ACCESS_KEY_SECRET: 'test-key-secret',
    ALIYUN_SMS_SIGN_NAME: 'Test',
    ALIYUN_SMS_TEMPLATE_CODE: 'SMS_0000',
    ALIYUN_SMS_ENDPOINT: 'http://127.0.0.1:9', // never called here
    MFA_ENCRYPTION_SECRET: 'container-test-mfa-secret-0123456789abcdef',
    // Production signs access tokens with a configured key (apps/membership/src/auth/access-token-keys.ts).
    ACCESS_TOKEN_KEYS: ACCESS_TOKEN_KEYS,
  });

  it("`migrate` applies both apps' migrations and exits 0; a second run has nothing to do", async () => {
    const first = dockerRun(['migrate'], commonEnv());
    expect([await exitOf(first), first.output()]).toEqual([
      0,
      expect.stringMatching(/membership: [\s\S]*ai-gateway: /),
    ]);
    const sql = await sqlClient(db.url);
    try {
      const tables = (
        await sql.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)
      ).rows.map((r) => r.table_name);
      expect(tables.length).toBeGreaterThan(3);
    } finally {
      await sql.end();
    }
    const second = dockerRun(['migrate'], commonEnv());
    expect(await exitOf(second)).toBe(0);
    expect(second.output()).toMatch(/membership: no pending migrations[\s\S]*ai-gateway: no pending migrations/);
  });

  it("`keys` and `admin:create` run the operators' CLIs from the image", async () => {
    const created = dockerRun(['keys', 'create', '--name', 'container-test', '--json'], commonEnv());
    expect([await exitOf(created), created.output()]).toEqual([0, expect.stringContaining('container-test')]);
    const listed = dockerRun(['keys', 'list'], commonEnv());
    expect([await exitOf(listed), listed.output()]).toEqual([0, expect.stringContaining('container-test')]);
    const bad = dockerRun(['keys', 'explode'], commonEnv());
    expect([await exitOf(bad), bad.output()]).toEqual([expect.any(Number), expect.stringContaining('usage: keys')]);
    expect(bad.child.exitCode).not.toBe(0);
    const admin = dockerRun(['admin:create'], commonEnv());
    expect(await exitOf(admin)).not.toBe(0); // no account given: refused with usage, not a crash
    expect(admin.output()).toContain('usage: admin:create');
  });

  it('ai-gateway: an upstream call is traced under its request, and the trace context reaches the upstream', async () => {
    const upstream = await startFakeOpenAi();
    const providers = path.join(work, 'providers.json');
    fs.writeFileSync(
      providers,
      JSON.stringify({
        models: { 'vendor-gpt-4-mini': { kind: 'chat', price: { inputPer1k: 1, outputPer1k: 2 } } },
        deployments: [
          { name: 'primary', type: 'openai', baseUrl: upstream.url, timeoutMs: 20_000, models: ['vendor-gpt-4-mini'] },
        ],
      }),
    );
    const port = await freePort();
    const env = {
      ...commonEnv(),
      AI_GATEWAY_PORT: String(port),
      AI_PROVIDERS_FILE: providers,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_METRIC_EXPORT_INTERVAL: '300',
    };
    const run = await startHealthy('ai-gateway', env);
    try {
      const base = `http://127.0.0.1:${port}`;
      const created = await fetch(`${base}/admin/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'trace' }),
      });
      expect(created.status).toBe(201);
      const { key } = (await created.json()) as { key: string };
      const res = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'vendor-gpt-4-mini', messages: [{ role: 'user', content: 'hello there' }] }),
      });
      expect(res.status).toBe(200);
      const isChatServer = (x: ReceivedSpan) =>
        x.service === 'ai-gateway' && x.kind === SERVER && x.attributes['url.path'] === '/v1/chat/completions';
      const spans = await receiver.waitFor((all) => {
        const server = all.find(isChatServer);
        return (
          !!server &&
          all.some(
            (x) =>
              x.traceId === server.traceId &&
              x.kind === 3 &&
              String(x.attributes['url.full'] ?? '').startsWith(upstream.url),
          )
        );
      }, 20_000);
      const server = spans.find(isChatServer)!;
      const client = spans.find(
        (x) =>
          x.traceId === server.traceId &&
          x.kind === 3 &&
          String(x.attributes['url.full'] ?? '').startsWith(upstream.url),
      )!;
      // The client span descends from the request's span (directly or through an internal span).
      const byId = new Map(spans.map((x) => [x.spanId, x]));
      let ancestor = client.parentSpanId ? byId.get(client.parentSpanId) : undefined;
      while (ancestor && ancestor.spanId !== server.spanId)
        ancestor = ancestor.parentSpanId ? byId.get(ancestor.parentSpanId) : undefined;
      expect(ancestor?.spanId).toBe(server.spanId);
      // W3C trace context went out with the upstream call.
      const upstreamCall = upstream.requests.find((r) => r.path === '/v1/chat/completions')!;
      expect(String(upstreamCall.headers.traceparent)).toMatch(new RegExp(`^00-${server.traceId}-[0-9a-f]{16}-0[01]$`));
      expect(JSON.stringify(spans)).not.toContain(key);
      // The GenAI metrics go out over OTLP too (beside /actuator/prometheus), with the convention's names.
      const deadline = Date.now() + 20_000;
      const names = () => new Set(receiver.metrics.filter((m) => m.service === 'ai-gateway').map((m) => m.name));
      while (
        !(names().has('gen_ai.client.token.usage') && names().has('gen_ai.client.operation.duration')) &&
        Date.now() < deadline
      )
        await new Promise((r) => setTimeout(r, 100));
      const usage = receiver.metrics.find((m) => m.name === 'gen_ai.client.token.usage');
      expect(usage?.unit).toBe('{token}');
      expect(usage?.points.map((p) => p['gen_ai.token.type']).sort()).toEqual(
        expect.arrayContaining(['input', 'output']),
      );
      expect(receiver.metrics.find((m) => m.name === 'gen_ai.client.operation.duration')?.unit).toBe('s');
    } finally {
      run.child.kill('SIGTERM');
      await exitOf(run, 30_000);
      await upstream.close();
    }
  });

  describe.each([
    [
      'membership',
      'MEMBERSHIP_PORT',
      '/api/v1/app/auth/login',
      {
        method: 'POST',
        body: JSON.stringify({ account: 'nobody_here', password: 'wrong-password-1' }),
        headers: { 'content-type': 'application/json' },
      },
    ],
    [
      'ai-gateway',
      'AI_GATEWAY_PORT',
      '/v1/models',
      { headers: { authorization: 'Bearer sk-not-a-real-key-000000000000' } },
    ],
  ] as const)('%s', (app, portVar, probePath, init) => {
    it('starts in production mode, passes the HEALTHCHECK, traces a request and its query, and stops on SIGTERM', async () => {
      const port = await freePort();
      const env = {
        ...commonEnv(),
        [portVar]: String(port),
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: '200',
      };
      // A fresh container: no marker from the previous app. Before the app runs, the HEALTHCHECK fails.
      fs.rmSync(path.join(work, 'tmp', '.container-app'), { force: true });
      expect(await healthcheck({ ...env, APP: app })).toBe(1);
      const run = dockerRun([app], env);
      const deadline = Date.now() + 90_000;
      // $APP is deliberately wrong: the HEALTHCHECK must follow the app the container was started with.
      const otherApp = app === 'membership' ? 'ai-gateway' : 'membership';
      while ((await healthcheck({ ...env, APP: otherApp })) !== 0) {
        if (run.child.exitCode !== null || Date.now() > deadline)
          throw new Error(`${app} did not become healthy:\n${run.output()}`);
        await new Promise((r) => setTimeout(r, 500));
      }
      const base = `http://127.0.0.1:${port}`;
      expect((await fetch(`${base}/actuator/health/readiness`)).status).toBe(200);
      if (app === 'membership') {
        // The account page, built into the image (dist/web), is served from it.
        const page = await fetch(`${base}/account/security`);
        expect([page.status, (await page.text()).includes('src="/account/assets/')]).toEqual([200, true]);
      }
      const res = await fetch(`${base}${probePath}`, init);
      expect(res.status).toBe(401);

      const spans = await receiver.waitFor((all) => {
        const server = all.find(
          (s) =>
            s.service === app &&
            s.kind === SERVER &&
            String(s.attributes['url.path'] ?? s.attributes['http.target']).startsWith(probePath),
        );
        return !!server && all.some((s) => s.traceId === server.traceId && s.name.startsWith('pg.query'));
      }, 20_000);
      const server = spans.find(
        (s) =>
          s.service === app &&
          s.kind === SERVER &&
          String(s.attributes['url.path'] ?? s.attributes['http.target']).startsWith(probePath),
      )!;
      expect(server.attributes['http.response.status_code'] ?? server.attributes['http.status_code']).toBe(401);
      // Probes are not traced.
      expect(
        spans.some(
          (s) =>
            s.service === app &&
            String(s.attributes['url.path'] ?? s.attributes['http.target'] ?? '').includes('/actuator/health'),
        ),
      ).toBe(false);
      // No secret from the request reaches the collector.
      expect(JSON.stringify(spans)).not.toMatch(/wrong-password-1|sk-not-a-real-key/);

      run.child.kill('SIGTERM');
      expect(await exitOf(run, 30_000)).toBe(0);

      // Everything it loaded from node_modules is a production dependency.
      const loaded: string[] = JSON.parse(fs.readFileSync(path.join(work, `loaded-${run.child.pid}.json`), 'utf8'));
      const devOnly = devOnlyPackages(root);
      const nodeModules = fs.realpathSync(path.join(root, 'node_modules'));
      const packages = new Set(loaded.map((f) => packageOf(f, nodeModules)).filter((p): p is string => !!p));
      expect(packages.has('node_modules/@nestjs/core')).toBe(true);
      expect(devOnly.has('node_modules/jest') && devOnly.has('node_modules/@nestjs/testing')).toBe(true);
      expect([...packages].filter((p) => devOnly.has(p))).toEqual([]);
      expect(loaded.some((f) => f.includes(`${path.sep}@nestjs${path.sep}core${path.sep}`))).toBe(true);
      expect(
        loaded.some((f) => f.startsWith(path.join(image.appDir, 'dist')) || f.includes(`${path.sep}stages${path.sep}`)),
      ).toBe(true);
    });
  });
});
