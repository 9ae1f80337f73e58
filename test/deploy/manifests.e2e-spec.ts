// Deployment files are code: Kubernetes manifests validated against the Kubernetes schemas (and
// strictly, so unknown fields fail), docker-compose.yml against the Compose Specification, the
// Dockerfile linted, and every variable the config classes read present in the ConfigMaps/Secrets
// and in the compose file, so adding a variable without deploying it fails here.
import 'reflect-metadata';
import { spawn } from 'child_process';
import * as fs from 'fs';
import { createServer, Server } from 'http';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import * as yaml from 'js-yaml';
import { validate as lintDockerfile, ValidationSeverity } from 'dockerfile-utils';
import { configKeys, ConfigError, loadConfig } from '@app/platform';
import { MembershipConfig } from '../../apps/membership/src/config/membership.config';
import { GatewayConfig } from '../../apps/ai-gateway/src/config/gateway.config';
import {
  composeValidator,
  containerEnvKeys,
  directEnvReads,
  k8sDir,
  label,
  loadCompose,
  loadManifests,
  Manifest,
  missingKeys,
  root,
  schemaErrors,
  SECRET_NAME,
  strictTypeErrors,
} from './deploy-files';

const APPS = {
  membership: { config: MembershipConfig, port: 8080, portVar: 'MEMBERSHIP_PORT' },
  'ai-gateway': { config: GatewayConfig, port: 8081, portVar: 'AI_GATEWAY_PORT' },
} as const;
type AppName = keyof typeof APPS;
const appNames = Object.keys(APPS) as AppName[];
const keysOf = (app: AppName) => configKeys(APPS[app].config);

/** Variables read with process.env.X outside the config classes that are not deployment settings. */
const NOT_DEPLOYMENT_SETTINGS = new Set<string>(['PATH']);

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));

describe('deployment files', () => {
  const manifests = loadManifests();
  const byKind = (kind: string) => manifests.filter((m) => m.doc.kind === kind);
  const find = (kind: string, name: string) =>
    manifests.find((m) => m.doc.kind === kind && m.doc.metadata?.name === name);

  describe('Kubernetes manifests (deploy/k8s)', () => {
    it('has every kind of object the deployment needs, for both apps', () => {
      expect(manifests.length).toBeGreaterThan(10);
      for (const app of appNames) {
        for (const kind of [
          'Deployment',
          'Service',
          'HorizontalPodAutoscaler',
          'PodDisruptionBudget',
          'Ingress',
          'ConfigMap',
          'Secret',
        ]) {
          expect({ app, kind, found: !!find(kind, app) || !!find(kind, `${app}-secrets`) }).toEqual({
            app,
            kind,
            found: true,
          });
        }
      }
      expect(find('Job', 'migrate')).toBeDefined();
      expect(find('ConfigMap', 'platform-common')).toBeDefined();
      expect(find('Secret', 'platform-secrets')).toBeDefined();
    });

    it('validates every manifest against the Kubernetes OpenAPI schemas', () => {
      expect(manifests.flatMap(schemaErrors)).toEqual([]);
    });

    it('validates strictly: no unknown or mistyped fields anywhere', () => {
      expect(strictTypeErrors(manifests)).toEqual([]);
    });

    it('the validators do catch broken manifests (they can fail)', () => {
      const deployment = clone(find('Deployment', 'membership')!);
      deployment.doc.spec.replicas = 'two';
      delete deployment.doc.spec.template.spec.containers[0].name;
      expect(schemaErrors(deployment).join('\n')).toMatch(/replicas must be integer[\s\S]*required property name/);

      const typo = clone(find('Deployment', 'membership')!);
      const c = typo.doc.spec.template.spec.containers[0];
      c.readinessprobe = c.readinessProbe;
      delete c.readinessProbe;
      expect(schemaErrors(typo)).toEqual([]); // the OpenAPI schemas alone let the typo through...
      expect(strictTypeErrors([typo]).join('\n')).toMatch(/readinessprobe/); // ...the strict check does not

      expect(schemaErrors({ file: 'x.yaml', index: 0, doc: { apiVersion: 'apps/v9', kind: 'Deployment' } })).toEqual([
        'x.yaml#0 Deployment/undefined: unknown apiVersion/kind apps/v9/Deployment',
      ]);
    });

    it('puts every object in one namespace, and lists every file in kustomization.yaml', () => {
      const namespace = byKind('Namespace')[0].doc.metadata.name;
      for (const m of manifests.filter((x) => x.doc.kind !== 'Namespace'))
        expect([label(m), m.doc.metadata.namespace]).toEqual([label(m), namespace]);
      const kustomization = yaml.load(fs.readFileSync(path.join(k8sDir, 'kustomization.yaml'), 'utf8')) as any;
      expect(kustomization.namespace).toBe(namespace);
      const files = [...new Set(manifests.map((m) => m.file))].sort();
      expect([...kustomization.resources].sort()).toEqual(files);
    });

    describe.each(appNames)('%s', (app) => {
      const deployment = () => find('Deployment', app)!.doc;
      const container = () => deployment().spec.template.spec.containers[0];
      const envOf = () => containerEnvKeys(container(), manifests);

      it('runs the image with the app as argument, on its port, with probes on the health groups', () => {
        const d = deployment();
        expect(d.spec.selector.matchLabels).toEqual(expect.objectContaining({ 'app.kubernetes.io/name': app }));
        for (const [k, v] of Object.entries(d.spec.selector.matchLabels))
          expect(d.spec.template.metadata.labels[k]).toBe(v);
        const c = container();
        expect(c.args).toEqual([app]);
        expect(c.ports).toEqual([expect.objectContaining({ name: 'http', containerPort: APPS[app].port })]);
        const { keys } = envOf();
        const configMapPort = manifests.find((m) => m.doc.kind === 'ConfigMap' && m.doc.metadata.name === app)!.doc
          .data[APPS[app].portVar];
        expect(Number(configMapPort)).toBe(APPS[app].port);
        expect(keys.has(APPS[app].portVar)).toBe(true);
        // Membership serves under CONTEXT_PATH: the probes must follow it.
        const prefix =
          app === 'membership' ? (find('ConfigMap', 'membership')!.doc.data.CONTEXT_PATH ?? '').replace(/\/$/, '') : '';
        expect(c.startupProbe.httpGet).toEqual({ path: `${prefix}/actuator/health/liveness`, port: 'http' });
        expect(c.livenessProbe.httpGet).toEqual({ path: `${prefix}/actuator/health/liveness`, port: 'http' });
        expect(c.readinessProbe.httpGet).toEqual({ path: `${prefix}/actuator/health/readiness`, port: 'http' });
        // Startup gets at least a minute before liveness can kill a slow boot.
        expect(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold).toBeGreaterThanOrEqual(60);
      });

      it('is locked down and has resources', () => {
        const pod = deployment().spec.template.spec;
        expect(pod.securityContext).toEqual(expect.objectContaining({ runAsNonRoot: true, runAsUser: 1000 }));
        expect(pod.automountServiceAccountToken).toBe(false);
        const c = container();
        expect(c.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(c.resources.requests).toEqual({ cpu: expect.any(String), memory: expect.any(String) });
        expect(c.resources.limits.memory).toEqual(expect.any(String));
        // Read-only root: the app writes only to mounted volumes, and every mount has a volume.
        const volumes = new Set(pod.volumes.map((v: any) => v.name));
        for (const mount of c.volumeMounts) expect(volumes.has(mount.name)).toBe(true);
        expect(c.volumeMounts.map((v: any) => v.mountPath)).toEqual(expect.arrayContaining(['/tmp', '/data']));
        // Shutdown: SIGTERM drain (SHUTDOWN_GRACE_MS) plus the preStop pause fit in the grace period.
        const grace = Number(envValue(app, 'SHUTDOWN_GRACE_MS'));
        expect(grace + 5000).toBeLessThan(pod.terminationGracePeriodSeconds * 1000);
        expect(deployment().spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
      });

      it('has a Service, an HPA and a PDB pointing at it', () => {
        const d = deployment();
        const service = find('Service', app)!.doc;
        expect(service.spec.selector).toEqual(d.spec.selector.matchLabels);
        expect(service.spec.ports[0].targetPort).toBe('http');
        const hpa = find('HorizontalPodAutoscaler', app)!.doc;
        expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: app });
        expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
        expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
        const pdb = find('PodDisruptionBudget', app)!.doc;
        expect(pdb.spec.selector.matchLabels).toEqual(d.spec.selector.matchLabels);
        expect(pdb.spec.minAvailable).toBeLessThan(hpa.spec.minReplicas);
      });

      it('gets every variable its config class reads from a ConfigMap or Secret (to fix: node deploy/sync-env.js)', () => {
        const { keys, problems } = envOf();
        expect(problems).toEqual([]);
        expect(missingKeys(keysOf(app), keys)).toEqual([]);
        expect(keys.get('HOST')).toBeDefined();
        expect(envValue(app, 'HOST')).toBe('0.0.0.0');
        expect(envValue(app, 'NODE_ENV')).toBe('production');
        expect(envValue(app, 'MIGRATIONS_RUN')).toBe('false');
      });

      it('keeps credentials in Secrets, never in ConfigMaps', () => {
        const { keys } = envOf();
        const misplaced = [...keys].filter(([k, from]) => SECRET_NAME.test(k) && !from.startsWith('Secret/'));
        expect(misplaced).toEqual([]);
      });

      it('is routed by an Ingress that streams (no buffering, long timeouts)', () => {
        const ingress = find('Ingress', app)!.doc;
        const a = ingress.metadata.annotations;
        expect(ingress.spec.ingressClassName).toBe('nginx');
        expect(a['nginx.ingress.kubernetes.io/proxy-buffering']).toBe('off');
        const minimum = app === 'ai-gateway' ? 3600 : 300; // SSE chat and WebSocket transcription live on the gateway
        expect(Number(a['nginx.ingress.kubernetes.io/proxy-read-timeout'])).toBeGreaterThanOrEqual(minimum);
        expect(Number(a['nginx.ingress.kubernetes.io/proxy-send-timeout'])).toBeGreaterThanOrEqual(minimum);
        expect(a['nginx.ingress.kubernetes.io/affinity']).toBeUndefined(); // stateless: no sticky sessions
        for (const rule of ingress.spec.rules) {
          for (const p of rule.http.paths) {
            const service = find('Service', p.backend.service.name)?.doc;
            expect(service).toBeDefined();
            expect(service.spec.ports.map((x: any) => x.name)).toContain(p.backend.service.port.name);
          }
        }
      });
    });

    it('keeps /actuator/* off the public hosts: an Ingress claims the prefix on each app host and admits no outside address', () => {
      for (const app of appNames) {
        const hosts = find('Ingress', app)!.doc.spec.rules.map((r: any) => r.host);
        const prefix =
          app === 'membership' ? (find('ConfigMap', 'membership')!.doc.data.CONTEXT_PATH ?? '').replace(/\/$/, '') : '';
        const guard = byKind('Ingress').find((m) =>
          m.doc.spec.rules.some(
            (r: any) =>
              hosts.includes(r.host) &&
              r.http.paths.some((p: any) => p.path === `${prefix}/actuator` && p.pathType === 'Prefix'),
          ),
        );
        expect({ app, guarded: !!guard }).toEqual({ app, guarded: true });
        const allowed = String(
          guard!.doc.metadata.annotations['nginx.ingress.kubernetes.io/whitelist-source-range'] ?? '',
        )
          .split(',')
          .map((x) => x.trim());
        expect(allowed).toEqual(['127.0.0.1/32']);
        // No other Ingress of these hosts routes the prefix (the app's own "/" rule matches after the longer prefix).
        for (const m of byKind('Ingress')) {
          for (const r of m.doc.spec.rules) {
            if (!hosts.includes(r.host)) continue;
            for (const p of r.http.paths)
              if (p.path.startsWith(`${prefix}/actuator`)) expect(m.doc.metadata.name).toBe(guard!.doc.metadata.name);
          }
        }
      }
    });

    it('runs migrations in a Job with the same image, and every variable of both apps (to fix: node deploy/sync-env.js)', () => {
      const job = find('Job', 'migrate')!.doc;
      const c = job.spec.template.spec.containers[0];
      expect(c.args).toEqual(['migrate']);
      expect(job.spec.template.spec.restartPolicy).toBe('Never');
      for (const app of appNames)
        expect(find('Deployment', app)!.doc.spec.template.spec.containers[0].image).toBe(c.image);
      const { keys, problems } = containerEnvKeys(c, manifests);
      expect(problems).toEqual([]);
      expect(missingKeys(new Set([...keysOf('membership'), ...keysOf('ai-gateway')]), keys)).toEqual([]);
      expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    });

    it('the env coverage check does fail when a variable is missing', () => {
      const trimmed: Manifest[] = clone(manifests);
      const cm = trimmed.find((m) => m.doc.kind === 'ConfigMap' && m.doc.metadata.name === 'platform-common')!;
      delete cm.doc.data.LOG_LEVEL;
      const c = trimmed.find((m) => m.doc.kind === 'Deployment' && m.doc.metadata.name === 'membership')!.doc.spec
        .template.spec.containers[0];
      expect(missingKeys(keysOf('membership'), containerEnvKeys(c, trimmed).keys)).toEqual(['LOG_LEVEL']);
      expect(missingKeys([...keysOf('membership'), 'SOME_NEW_SETTING'], containerEnvKeys(c, manifests).keys)).toEqual([
        'SOME_NEW_SETTING',
      ]);
    });

    it('configures values the apps accept at boot in production, once the secrets are filled in', () => {
      // Per deployment, not in the repository: real secrets and the SMS sender's approved names.
      const filled = (env: Record<string, string>) => ({
        ...Object.fromEntries(
          Object.entries(env).map(([k, v]) => [
            k,
            v === 'CHANGE-ME' ? `filled-${k.toLowerCase()}-0123456789abcdef0123456789` : v,
          ]),
        ),
        ALIYUN_SMS_SIGN_NAME: 'Example',
        ALIYUN_SMS_TEMPLATE_CODE: 'SMS_000000',
      });
      for (const app of appNames) {
        const env = deploymentEnv(app);
        expect(() => loadConfig(APPS[app].config as new () => object, filled(env))).not.toThrow();
        // As committed, the placeholders stop the app with a clear message instead of running insecurely.
        let error: unknown;
        try {
          loadConfig(APPS[app].config as new () => object, env);
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(ConfigError);
        expect(String((error as Error).message)).toMatch(app === 'membership' ? /JWT_SECRET/ : /ADMIN_TOKEN/);
      }
    });

    it('has only placeholder secrets that the apps refuse at boot', () => {
      for (const secret of byKind('Secret')) {
        for (const [k, v] of Object.entries<string>(secret.doc.stringData ?? {})) {
          expect([k, v === '' || /CHANGE-ME/.test(v)]).toEqual([k, true]);
        }
        expect(secret.doc.data).toBeUndefined();
      }
    });

    /** The environment a Deployment's container gets (envFrom in order, then env). */
    function deploymentEnv(app: AppName): Record<string, string> {
      const c = find('Deployment', app)!.doc.spec.template.spec.containers[0];
      const env: Record<string, string> = {};
      for (const source of c.envFrom) {
        const ref = source.configMapRef ?? source.secretRef;
        const m = find(source.configMapRef ? 'ConfigMap' : 'Secret', ref.name);
        Object.assign(env, m?.doc.data, m?.doc.stringData);
      }
      for (const e of c.env ?? []) env[e.name] = e.value;
      return env;
    }

    function envValue(app: AppName, key: string): string | undefined {
      const c = find('Deployment', app)!.doc.spec.template.spec.containers[0];
      let value: string | undefined;
      for (const source of c.envFrom) {
        const ref = source.configMapRef ?? source.secretRef;
        const m = find(source.configMapRef ? 'ConfigMap' : 'Secret', ref.name);
        const data = { ...m?.doc.data, ...m?.doc.stringData };
        if (key in data) value = data[key];
      }
      const direct = (c.env ?? []).find((e: any) => e.name === key);
      return direct ? direct.value : value;
    }
  });

  describe('docker-compose.yml', () => {
    const compose = loadCompose();
    const services = compose.services;

    it('validates against the Compose Specification schema (and the validator can fail)', () => {
      const validate = composeValidator();
      expect(validate(compose)).toEqual([]);
      const broken = clone(compose);
      broken.services.membership.healthcheck.intervall = '5s';
      broken.services.membership.depends_on.postgres.condition = 'service_exploded';
      expect(validate(broken).join('\n')).toMatch(/intervall[\s\S]*|allowed values/);
      expect(validate(broken).length).toBeGreaterThan(1);
    });

    it('has PostgreSQL, Redis, MinIO, a one-shot migration and both apps, each long-running one with a healthcheck', () => {
      expect(Object.keys(services)).toEqual(
        expect.arrayContaining(['postgres', 'redis', 'minio', 'migrate', ...appNames]),
      );
      for (const name of ['postgres', 'redis', 'minio', ...appNames]) {
        expect([name, Array.isArray(services[name].healthcheck?.test)]).toEqual([name, true]);
      }
      expect(services.migrate.command).toEqual(['migrate']);
      expect(services.migrate.restart).toBe('no');
    });

    it('starts in order: dependencies healthy, migrations and bucket done, then the apps', () => {
      for (const [name, svc] of Object.entries<any>(services)) {
        for (const [dep, cond] of Object.entries<any>(svc.depends_on ?? {})) {
          expect([name, dep, !!services[dep]]).toEqual([name, dep, true]);
          // One-shot services are waited for to finish, long-running ones to be healthy.
          const expected = services[dep].restart === 'no' ? 'service_completed_successfully' : 'service_healthy';
          expect([name, dep, cond.condition]).toEqual([name, dep, expected]);
          if (expected === 'service_healthy') expect(services[dep].healthcheck).toBeDefined();
        }
      }
      for (const app of appNames) {
        expect(Object.keys(services[app].depends_on).sort()).toEqual(['migrate', 'minio-init', 'postgres', 'redis']);
      }
      expect(Object.keys(services.migrate.depends_on)).toEqual(['postgres']);
    });

    it('runs the apps on their ports with every variable their config class reads (to fix: node deploy/sync-env.js)', () => {
      for (const app of appNames) {
        const svc = services[app];
        expect(svc.command).toEqual([app]);
        const env = svc.environment;
        expect(missingKeys(keysOf(app), new Set(Object.keys(env)))).toEqual([]);
        expect(env.HOST).toBe('0.0.0.0');
        expect(env.NODE_ENV).toBe('production');
        expect(String(env[APPS[app].portVar])).toBe(String(APPS[app].port));
        expect(svc.ports.some((p: string) => p.endsWith(`:${APPS[app].port}`))).toBe(true);
        // Shared state and files must be shared between replicas.
        expect(env.REDIS_URL).toMatch(/^redis:\/\/redis:6379/);
        expect(env.S3_ENDPOINT).toBe('http://minio:9000');
        expect(env.DATABASE_URL).toMatch(/@postgres:5432\//);
      }
      const migrateEnv = new Set(Object.keys(services.migrate.environment));
      expect(missingKeys(new Set([...keysOf('membership'), ...keysOf('ai-gateway')]), migrateEnv)).toEqual([]);
    });

    it('takes credentials from .env (documented in .env.example), never literally', () => {
      const text = fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
      const required = [...text.matchAll(/\$\{([A-Z0-9_]+):\?/g)].map((m) => m[1]);
      expect(required.length).toBeGreaterThan(0);
      const example = fs.readFileSync(path.join(root, '.env.example'), 'utf8');
      for (const name of new Set(required))
        expect([name, new RegExp(`^${name}=`, 'm').test(example)]).toEqual([name, true]);
      for (const app of appNames) {
        for (const [k, v] of Object.entries<any>(services[app].environment)) {
          // A credential is interpolated from .env, or is a URL without a password (internal Redis).
          if (SECRET_NAME.test(k))
            expect([k, /\$\{/.test(String(v)) || !/:\/\/[^/]*:[^/@]*@/.test(String(v))]).toEqual([k, true]);
        }
      }
    });

    it('gives the apps values they accept at boot (defaults interpolated, required values filled in)', () => {
      // Compose interpolation: ${VAR:-default} -> default, ${VAR:?error} -> a value from .env, ${VAR} -> empty.
      const interpolate = (v: unknown) =>
        String(v).replace(/\$\{(\w+)(?::?([-?]))?([^}]*)\}/g, (_, name, op, arg) =>
          op === '-' ? arg : op === '?' ? `dotenv-${name.toLowerCase()}-0123456789abcdef0123456789` : '',
        );
      for (const app of appNames) {
        const env = Object.fromEntries(
          Object.entries<any>(services[app].environment).map(([k, v]) => [k, interpolate(v)]),
        );
        expect(env.DATABASE_URL).toMatch(
          /^postgres:\/\/platform:dotenv-postgres_password-\w+@postgres:5432\/platform$/,
        );
        expect(() => loadConfig(APPS[app].config as new () => object, env)).not.toThrow();
      }
    });

    it('declares every named volume it mounts', () => {
      const declared = new Set(Object.keys(compose.volumes ?? {}));
      for (const [name, svc] of Object.entries<any>(services)) {
        for (const v of svc.volumes ?? []) {
          const source = String(v).split(':')[0];
          if (!source.startsWith('.') && !source.startsWith('/'))
            expect([name, source, declared.has(source)]).toEqual([name, source, true]);
        }
      }
    });
  });

  describe('configuration inventory', () => {
    it('deploy/sync-env.js adds a forgotten variable to the ConfigMap/Secret and compose file', () => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain JS script outside the TypeScript project
      const sync = require('../../deploy/sync-env.js');
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sync-env-'));
      try {
        for (const f of [
          'deploy/k8s/configmap.yaml',
          'deploy/k8s/secret.yaml',
          'docker-compose.yml',
          'libs/platform/src/config/base.config.ts',
          'apps/membership/src/config/membership.config.ts',
          'apps/ai-gateway/src/config/gateway.config.ts',
        ]) {
          fs.mkdirSync(path.dirname(path.join(tmp, f)), { recursive: true });
          fs.copyFileSync(path.join(root, f), path.join(tmp, f));
        }
        const quiet = { write: () => true };
        expect(sync.run({ check: true, base: tmp, out: quiet })).toBe(0);
        // A developer adds two settings to the membership class and deploys neither.
        const cls = path.join(tmp, 'apps/membership/src/config/membership.config.ts');
        fs.writeFileSync(
          cls,
          fs
            .readFileSync(cls, 'utf8')
            .replace(
              /\n}\s*$/,
              '\n  /** A new tunable. */\n  NEW_TUNABLE_MS: number = 5;\n  /** A new credential. */\n  NEW_VENDOR_API_KEY?: string;\n}\n',
            ),
        );
        expect(sync.run({ check: true, base: tmp, out: quiet })).toBe(1);
        expect(sync.run({ check: false, base: tmp, out: quiet })).toBe(0);
        expect(sync.run({ check: true, base: tmp, out: quiet })).toBe(0);
        const synced = loadManifests(path.join(tmp, 'deploy/k8s'));
        expect(synced.flatMap(schemaErrors)).toEqual([]);
        const cm = synced.find((m) => m.doc.kind === 'ConfigMap' && m.doc.metadata.name === 'membership')!.doc.data;
        const secret = synced.find((m) => m.doc.kind === 'Secret' && m.doc.metadata.name === 'membership-secrets')!.doc
          .stringData;
        expect([cm.NEW_TUNABLE_MS, secret.NEW_VENDOR_API_KEY, cm.NEW_VENDOR_API_KEY]).toEqual(['', '', undefined]);
        const composed = loadCompose(path.join(tmp, 'docker-compose.yml'));
        expect(composed.services.membership.environment.NEW_TUNABLE_MS).toBe('${NEW_TUNABLE_MS:-}');
        expect(composed.services['ai-gateway'].environment.NEW_TUNABLE_MS).toBeUndefined();
        expect(composeValidator()(composed)).toEqual([]);
      } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    });

    it('every process.env read in apps/ and libs/ is a deployed variable too', () => {
      const reads = directEnvReads();
      const deployed = new Set<string>();
      for (const m of manifests.filter((x) => x.doc.kind === 'ConfigMap' || x.doc.kind === 'Secret')) {
        for (const k of Object.keys({ ...m.doc.data, ...m.doc.stringData })) deployed.add(k);
      }
      const missing = [...reads]
        .filter(([k]) => !deployed.has(k) && !NOT_DEPLOYMENT_SETTINGS.has(k))
        .map(([k, file]) => `${k} (${file})`);
      expect(missing).toEqual([]);
    });
  });

  describe('Dockerfile', () => {
    const text = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    // Instructions with continuation lines joined, grouped by stage.
    const instructions = text
      .replace(/\\\n/g, ' ')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    const stages: { name: string; lines: string[] }[] = [];
    for (const line of instructions) {
      const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
      if (from) stages.push({ name: from[2] ?? from[1], lines: [] });
      stages[stages.length - 1]?.lines.push(line);
    }
    const final = stages[stages.length - 1];

    it('passes the Dockerfile linter (dockerfile-utils) with every check as an error', () => {
      const all = ValidationSeverity.ERROR;
      const settings = {
        deprecatedMaintainer: all,
        directiveCasing: all,
        emptyContinuationLine: all,
        instructionCasing: all,
        instructionCmdMultiple: all,
        instructionEntrypointMultiple: all,
        instructionHealthcheckMultiple: all,
        instructionJSONInSingleQuotes: all,
        instructionWorkdirRelative: all,
      };
      expect(
        lintDockerfile(text, settings).map(
          (d) => `line ${d.range.start.line + 1}: ${typeof d.message === 'string' ? d.message : d.message.value}`,
        ),
      ).toEqual([]);
      // The linter does report problems (guard against a silently passing tool).
      expect(
        lintDockerfile(
          'FROM node:20 AS build\nworkdir app\nHEALTHCHECK --interval=xs CMD true\nEXPOSE port\n',
          settings,
        ).length,
      ).toBeGreaterThanOrEqual(3);
    });

    it('runs the apps with the V8 flags of scripts/node-flags.js (NODE_OPTIONS), as scripts/start.js and the bench do', () => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { NODE_FLAGS } = require(path.join(root, 'scripts', 'node-flags.js')) as { NODE_FLAGS: string[] };
      expect(NODE_FLAGS.length).toBeGreaterThan(0);
      const env = final.lines.filter((l) => /^ENV\s/i.test(l)).join(' ');
      const options = /NODE_OPTIONS=(?:"([^"]*)"|(\S+))/.exec(env);
      expect(options).not.toBeNull();
      const flags = (options![1] ?? options![2]).split(/\s+/);
      for (const flag of NODE_FLAGS) expect(flags).toContain(flag);
    });

    it('is multi-stage: the runtime stage has production dependencies only, runs as non-root, and has a HEALTHCHECK', () => {
      expect(stages.length).toBeGreaterThanOrEqual(3);
      const prod = stages.find((s) => s.lines.some((l) => /npm ci\b.*--omit=dev/.test(l)));
      expect(prod).toBeDefined();
      const copiedFrom = final.lines.map((l) => /COPY\s+--from=(\S+)/.exec(l)?.[1]).filter(Boolean);
      expect(copiedFrom).toContain(prod!.name);
      // node_modules in the runtime stage come from the production-only stage.
      const modules = final.lines.filter((l) => /COPY\s+--from=\S+\s+\S*node_modules/.test(l));
      expect(modules).toHaveLength(1);
      expect(modules[0]).toContain(`--from=${prod!.name}`);
      expect(final.lines.some((l) => /npm (ci|install)/.test(l))).toBe(false);
      const user = final.lines.filter((l) => /^USER\s/.test(l)).pop();
      expect(user).toBeDefined();
      expect(user).not.toMatch(/^USER\s+(root|0)(:|\s|$)/);
      expect(final.lines.some((l) => /^HEALTHCHECK\s/.test(l))).toBe(true);
      expect(final.lines.some((l) => /^ENTRYPOINT\s+\[.*entrypoint\.js/.test(l))).toBe(true);
      expect(final.lines.find((l) => /^ENV\s/.test(l) && /HOST=0\.0\.0\.0/.test(l))).toBeDefined();
      expect(final.lines.find((l) => /^ENV\s/.test(l) && /NODE_ENV=production/.test(l))).toBeDefined();
    });

    it('copies only files that exist, and .dockerignore keeps secrets and local state out of the context', () => {
      for (const line of stages.flatMap((s) => s.lines).filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))) {
        const parts = line
          .split(/\s+/)
          .slice(1)
          .filter((p) => !p.startsWith('--'));
        for (const src of parts.slice(0, -1)) expect([src, fs.existsSync(path.join(root, src))]).toEqual([src, true]);
      }
      const ignore = fs
        .readFileSync(path.join(root, '.dockerignore'), 'utf8')
        .split('\n')
        .map((l) => l.trim());
      expect(ignore).toEqual(expect.arrayContaining(['.git', 'node_modules', 'dist', 'data', '.env']));
      // tsc's output layout is what the entry point requires.
      const build = JSON.parse(fs.readFileSync(path.join(root, 'tsconfig.json'), 'utf8')).compilerOptions;
      expect([build.outDir, build.rootDir]).toEqual(['./dist', '.']);
      const entry = fs.readFileSync(path.join(root, 'deploy', 'docker', 'entrypoint.js'), 'utf8');
      for (const app of appNames) {
        expect(entry).toContain(`dist/apps/${app}/src/main.js`);
        expect(fs.existsSync(path.join(root, 'apps', app, 'src', 'main.ts'))).toBe(true);
      }
    });
  });

  describe('container entry point (deploy/docker/entrypoint.js)', () => {
    const entry = path.join(root, 'deploy', 'docker', 'entrypoint.js');
    let tmp: string;
    beforeAll(() => {
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'entrypoint-'));
    });
    afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

    function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [entry, ...args], {
          env: { PATH: process.env.PATH, TMPDIR: tmp, ...env },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d) => (stderr += d));
        const timer = setTimeout(() => child.kill('SIGKILL'), 15000);
        child.on('error', reject);
        child.on('exit', (code) => {
          clearTimeout(timer);
          resolve({ code, stderr });
        });
      });
    }

    async function fakeApp(
      status: number,
      pathExpected: string,
    ): Promise<{ server: Server; port: number; hits: string[] }> {
      const hits: string[] = [];
      const server = createServer((req, res) => {
        hits.push(req.url ?? '');
        res.writeHead(req.url === pathExpected ? status : 404).end();
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return { server, port: (server.address() as AddressInfo).port, hits };
    }

    it('refuses an unknown command with usage', async () => {
      const r = await run(['bogus'], {});
      expect(r.code).toBe(64);
      expect(r.stderr).toMatch(/usage: entrypoint\.js membership \| ai-gateway/);
    });

    it('refuses a command, app or migrate target named like an Object.prototype member with usage', async () => {
      // APPS is an object literal: `constructor` found Object's member and was run as an app (a TypeError
      // from path.join instead of the usage), or passed on to the migration script.
      for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
        const asCommand = await run([name], {});
        expect([name, asCommand.code]).toEqual([name, 64]);
        expect(asCommand.stderr).toContain(`unknown command ${JSON.stringify(name)}`);
        const asAppEnv = await run([], { APP: name });
        expect([name, asAppEnv.code]).toEqual([name, 64]);
        const migrate = await run(['migrate', name], {});
        expect([name, migrate.code]).toEqual([name, 64]);
        expect(migrate.stderr).toContain(`migrate: unknown app ${JSON.stringify(name)}`);
        fs.rmSync(path.join(tmp, '.container-app'), { force: true });
        const health = await run(['healthcheck'], { APP: name });
        expect([name, health.code]).toEqual([name, 64]);
        expect(health.stderr).toContain(`healthcheck: unknown app ${JSON.stringify(name)}`);
      }
    });

    it("healthcheck: 0 when liveness answers 200, 1 otherwise, on the running app's port and context path", async () => {
      fs.rmSync(path.join(tmp, '.container-app'), { force: true });
      const up = await fakeApp(200, '/member/actuator/health/liveness');
      const down = await fakeApp(503, '/actuator/health/liveness');
      try {
        expect(
          (
            await run(['healthcheck'], {
              APP: 'membership',
              MEMBERSHIP_PORT: String(up.port),
              CONTEXT_PATH: '/member/',
            })
          ).code,
        ).toBe(0);
        expect(up.hits).toEqual(['/member/actuator/health/liveness']);
        expect((await run(['healthcheck'], { APP: 'ai-gateway', AI_GATEWAY_PORT: String(down.port) })).code).toBe(1);
        expect(down.hits).toEqual(['/actuator/health/liveness']);
        // The app the container was started with (`docker run image ai-gateway`) wins over $APP.
        const gateway = await fakeApp(200, '/actuator/health/liveness');
        fs.writeFileSync(path.join(tmp, '.container-app'), 'ai-gateway');
        expect(
          (
            await run(['healthcheck'], {
              APP: 'membership',
              AI_GATEWAY_PORT: String(gateway.port),
              MEMBERSHIP_PORT: '1',
            })
          ).code,
        ).toBe(0);
        expect(gateway.hits).toEqual(['/actuator/health/liveness']);
        gateway.server.close();
        // Nothing listening: unhealthy, not a hang.
        down.server.close();
        expect((await run(['healthcheck'], { APP: 'ai-gateway', AI_GATEWAY_PORT: String(down.port) })).code).toBe(1);
      } finally {
        up.server.close();
        down.server.close();
      }
    });
  });
});
