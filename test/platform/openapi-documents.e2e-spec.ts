// Both apps' OpenAPI documents tell the truth about access: the bearer is required everywhere (one
// global requirement) except on `@Public()` routes, whose operations carry the empty requirement
// (libs/auth/src/decorators.ts); and each group of operations has one tag, spelled one way.
import { ModulesContainer } from '@nestjs/core';
import { controllerRoutes } from '@app/platform';
import { RunningApp, startGateway, startMembership } from '../support/apps';

type Requirement = Record<string, string[]>;
interface Operation {
  security?: Requirement[];
  tags?: string[];
}
interface OpenApiDoc {
  security?: Requirement[];
  paths: Record<string, Record<string, Operation>>;
}

const BEARER: Requirement[] = [{ bearer: [] }];
const PUBLIC: Requirement[] = [{}];
// Open to anyone, with more for the bearer of MANAGEMENT_TOKEN (libs/platform/src/health/management-token.ts).
const OPTIONAL_BEARER: Requirement[] = [{}, { bearer: [] }];
const OPTIONAL_CREDENTIAL = new Set([
  'get /actuator/health',
  'get /actuator/health/readiness',
  'get /actuator/prometheus',
]);

/** Which operations are `@Public()`, from the controllers' metadata (the guard's own reading), keyed `method /openapi/{path}`. */
function publicByOperation(app: RunningApp): Map<string, boolean> {
  const routes = controllerRoutes(app.app.get(ModulesContainer), '');
  return new Map(routes.map((r) => [`${r.method.toLowerCase()} ${r.path.replace(/[:*](\w+)/g, '{$1}')}`, r.public]));
}

function operations(doc: OpenApiDoc): Array<[string, Operation]> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]): [string, Operation] => [`${method} ${path}`, op]),
  );
}

describe.each([
  [
    'membership',
    startMembership,
    [
      'post /api/v1/app/auth/login',
      'post /api/v1/app/auth/register',
      'post /api/v1/app/auth/send-code',
      'get /api/v1/admin/system/site-config/public',
      'get /login/oauth2/code/{registrationId}',
      'get /.well-known/jwks.json',
      'get /actuator/health/liveness',
    ],
  ],
  ['ai-gateway', startGateway, ['get /actuator/health/liveness', 'get /v1/speech/stream']],
] as const)('%s OpenAPI document', (_name, start, knownPublic) => {
  let app: RunningApp;
  let doc: OpenApiDoc;
  beforeAll(async () => {
    app = await start();
    doc = (await (await fetch(`${app.url}/v3/api-docs`)).json()) as OpenApiDoc;
  });
  afterAll(() => app?.close());

  it('requires the bearer globally and never empties an operation’s requirements', () => {
    expect(doc.security).toEqual(BEARER);
    expect(
      operations(doc)
        .filter(([, op]) => Array.isArray(op.security) && op.security.length === 0)
        .map(([key]) => key),
    ).toEqual([]);
  });

  it('marks exactly the @Public() operations public; every other one needs the bearer', () => {
    const open = publicByOperation(app);
    const wrong: string[] = [];
    for (const [key, op] of operations(doc)) {
      expect({ key, routed: open.has(key) }).toEqual({ key, routed: true });
      const expected = !open.get(key) ? BEARER : OPTIONAL_CREDENTIAL.has(key) ? OPTIONAL_BEARER : PUBLIC;
      const actual = op.security ?? doc.security;
      if (JSON.stringify(actual) !== JSON.stringify(expected))
        wrong.push(`${key}: ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
    }
    expect(wrong).toEqual([]);
    // The comparison above reads the same metadata as the guard; these are public by the contract.
    for (const key of knownPublic)
      expect({ key, security: doc.paths[key.split(' ')[1]]?.[key.split(' ')[0]]?.security }).toEqual({
        key,
        security: PUBLIC,
      });
    expect(operations(doc).filter(([, op]) => op.security === undefined).length).toBeGreaterThan(0);
  });

  it('tags every operation, one spelling per tag', () => {
    expect(
      operations(doc)
        .filter(([, op]) => !op.tags?.length)
        .map(([key]) => key),
    ).toEqual([]);
    const spellings = new Map<string, Set<string>>();
    for (const [, op] of operations(doc))
      for (const tag of op.tags ?? [])
        spellings.set(tag.toLowerCase(), (spellings.get(tag.toLowerCase()) ?? new Set()).add(tag));
    expect([...spellings.values()].filter((s) => s.size > 1).map((s) => [...s])).toEqual([]);
  });
});
