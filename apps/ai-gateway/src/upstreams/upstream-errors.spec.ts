import { GatewayError } from '../errors';
import { EngineInputError } from '@app/engines';
import { CallAbortedError, NoDeploymentError, UnsupportedRequestError, UpstreamError } from '@app/llm';
import { toGatewayError } from './upstream-errors';

const shape = (e: unknown) => {
  const err = e as GatewayError;
  return { status: err.getStatus(), ...(err.getResponse() as object) };
};

describe('toGatewayError', () => {
  it('maps timeouts to 504 and failures to 502 naming the deployment', () => {
    expect(
      shape(
        toGatewayError(
          new UpstreamError('upstream did not answer within 10 ms', 'timeout', 0, undefined, undefined, 'east'),
        ),
      ),
    ).toMatchObject({ status: 504, errorCode: 'upstream_timeout' });
    const bad = shape(
      toGatewayError(new UpstreamError('upstream returned 500: boom', 'http', 500, undefined, undefined, 'east')),
    );
    expect(bad).toMatchObject({
      status: 502,
      type: 'upstream_error',
      message: 'Upstream east failed: upstream returned 500: boom',
    });
    expect(
      shape(toGatewayError(new UpstreamError('upstream returned 429: slow down', 'http', 429, 1000))),
    ).toMatchObject({ status: 502 });
    expect(shape(toGatewayError(new UpstreamError('upstream returned 401: bad key', 'http', 401)))).toMatchObject({
      status: 502,
    });
  });

  it('passes an upstream 400 through in its own words', () => {
    const e = new UpstreamError('upstream returned 400: x', 'http', 400, undefined, {
      message: 'messages: too many images',
      code: 'invalid_value',
      param: 'messages',
    });
    expect(shape(toGatewayError(e))).toMatchObject({
      status: 400,
      message: 'messages: too many images',
      errorCode: 'invalid_value',
      param: 'messages',
    });
  });

  it('maps routing and translation refusals', () => {
    expect(shape(toGatewayError(new NoDeploymentError('m')))).toMatchObject({ status: 503, errorCode: 'no_provider' });
    expect(shape(toGatewayError(new UnsupportedRequestError('n > 1 is not supported', 'n')))).toMatchObject({
      status: 400,
      param: 'n',
    });
    expect(shape(toGatewayError(new CallAbortedError()))).toMatchObject({
      status: 400,
      errorCode: 'client_closed_request',
    });
    expect(shape(toGatewayError(new EngineInputError('every input must be a non-empty string')))).toMatchObject({
      status: 400,
      errorCode: 'invalid_value',
      param: 'input',
      message: 'input: every input must be a non-empty string',
    });
    const other = new Error('x');
    expect(toGatewayError(other)).toBe(other);
  });

  it("answers a local engine's busy replica, after the router's retries, as 503 engine_busy (not 502)", () => {
    const busy = new UpstreamError('the local engines are busy', 'http', 503, 1000, {
      code: 'engine_busy',
      message: 'the local engines are busy',
    }).withDeployment('in-process');
    expect(shape(toGatewayError(busy))).toMatchObject({ status: 503, errorCode: 'engine_busy' });
  });
});
