import { ApiOpenAiErrors } from './openai-error.doc';

describe('ApiOpenAiErrors', () => {
  it('names the catalog codes of each documented status, HTTP codes only', () => {
    class Route {
      @ApiOpenAiErrors(400, 401, 503)
      handle() {}
    }
    const responses = Reflect.getMetadata('swagger/apiResponse', Route.prototype.handle);
    expect(responses['400'].description).toMatch(
      /^Invalid request .*`invalid_value`.*`invalid_<input>`.*`upstream_rejected_request`/,
    );
    expect(responses['401'].description).toContain('`invalid_admin_token`');
    expect(responses['503'].description).toContain('`no_provider`');
    expect(responses['503'].description).not.toContain('server_shutdown');
    expect(responses['400'].description).not.toContain('invalid_config');
  });
});
