import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

describe('AI gateway OpenAPI document', () => {
  let f: GatewayFixture;
  beforeAll(async () => {
    f = await startGatewayFixture();
  });
  afterAll(() => f?.close());

  it('documents every core endpoint with request examples and OpenAI error responses', async () => {
    const doc = await (await fetch(`${f.gw.url}/v3/api-docs`)).json();
    const ops: Array<[string, string]> = [
      ['/v1/chat/completions', 'post'],
      ['/v1/embeddings', 'post'],
      ['/v1/models', 'get'],
      ['/v1/models/{model}', 'get'],
      ['/v1/usage', 'get'],
      ['/admin/usage', 'get'],
      ['/admin/keys', 'post'],
      ['/admin/keys', 'get'],
      ['/admin/keys/{id}', 'get'],
      ['/admin/keys/{id}', 'patch'],
      ['/admin/keys/{id}', 'delete'],
      ['/admin/projects', 'post'],
      ['/admin/projects', 'get'],
      ['/admin/projects/{id}', 'get'],
      ['/admin/projects/{id}', 'patch'],
      ['/admin/projects/{id}', 'delete'],
    ];
    for (const [path, method] of ops) {
      const op = doc.paths?.[path]?.[method];
      expect({ path, method, documented: !!op?.summary }).toEqual({ path, method, documented: true });
      const ok = op.responses['200'] ?? op.responses['201'];
      expect(ok?.content?.['application/json']?.schema).toBeDefined();
    }
    const chat = doc.paths['/v1/chat/completions'].post;
    expect(Object.keys(chat.requestBody.content['application/json'].examples)).toEqual([
      'simple',
      'streamed',
      'tools',
      'image',
      'audioOutput',
      'webSearch',
    ]);
    expect(chat.responses['429'].content['application/json'].schema.$ref).toMatch(/OpenAiErrorResponse$/);
    expect(
      doc.paths['/v1/embeddings'].post.requestBody.content['application/json'].examples.batchBase64.value
        .encoding_format,
    ).toBe('base64');
    expect(
      doc.paths['/v1/embeddings'].post.requestBody.content['application/json'].examples.tokenArrays.value.input,
    ).toEqual([
      [15339, 1917],
      [791, 8415, 23874],
    ]);
    expect(doc.paths['/admin/usage'].get.parameters.map((p: any) => p.name)).toEqual(
      expect.arrayContaining(['period', 'project_id', 'group_by', 'key_id']),
    );
    expect(doc.paths['/v1/usage'].get.parameters.map((p: any) => p.name)).toEqual(
      expect.arrayContaining(['period', 'start_date', 'end_date']),
    );
    expect(doc.components.schemas.AdminUsageLine.properties).toHaveProperty('project_id');
    const projects = doc.paths['/admin/projects'];
    expect(projects.post.tags).toEqual(['admin']);
    expect(projects.post.requestBody.content['application/json'].examples.limited.value).toMatchObject({
      name: 'web',
      budget_period: 'monthly',
      model_limits: { 'vendor-gpt-4': { tokens_per_minute: 20000 } },
    });
    expect(projects.get.parameters.map((p: any) => p.name).sort()).toEqual(['limit', 'offset', 'q']);
    expect(doc.paths['/admin/projects/{id}'].delete.responses['409'].description).toContain('project_has_keys');
    expect(doc.paths['/admin/projects/{id}'].get.responses['404'].content['application/json'].schema.$ref).toMatch(
      /OpenAiErrorResponse$/,
    );
    expect(doc.components.schemas.ProjectResponse.properties).toHaveProperty('key_count');
    expect(doc.components.schemas.ProjectResponse.properties).toHaveProperty('budget_usage');
    expect(doc.components.schemas.CreateProjectRequest.required).toEqual(['name']);
    expect(doc.components.schemas.ChatCompletionRequest.properties.temperature).toMatchObject({
      minimum: 0,
      maximum: 2,
    });
  });
});
