import { GatewayError, GatewayErrorCode } from '../errors';
import { GatewayConfig } from '../config/gateway.config';
import { LiveTranscription } from './live-transcription';

describe('LiveTranscription: the /v1/speech/stream use case without the socket', () => {
  const config = Object.assign(new GatewayConfig(), {
    AI_STREAM_MAX_SECONDS: 600,
    AI_TRANSCRIBE_BASE_URL: 'http://upstream.invalid/v1',
    AI_TRANSCRIBE_MODEL: 'whisper-1',
  });
  const key = (scopes?: string[]) =>
    ({ id: 'key-1', kind: 'api-key', roles: [], claims: scopes ? { scopes } : {} }) as any;

  const setup = (remaining: { yuan: number | null; exhausted: boolean }) => {
    const reserved: any[] = [];
    const settled: any[] = [];
    const checked: Array<string | undefined> = [];
    const metering = {
      remaining: async () => remaining,
      reserve: async (_p: unknown, hold: unknown) => (reserved.push(hold), { id: 'r' }),
      settle: async (_r: unknown, outcome: unknown) => void settled.push(outcome),
    };
    const engines = {
      check: (language?: string) => void checked.push(language),
      transcribePcm: async () => ({ text: ' hi ', provider: 'upstream' }),
    };
    return { live: new LiveTranscription(config, metering as any, engines as any), reserved, settled, checked };
  };

  it('sizes the session by the budget (0.03 yuan a minute) and reserves it once', async () => {
    const { live, reserved, checked } = setup({ yuan: 0.01, exhausted: false });
    const alive = () => true;
    const session = await live.open(key(), 'en', alive);
    // 0.01 yuan at 0.0005 yuan a second: 20 seconds.
    expect(session.maxSeconds).toBe(20);
    expect(reserved).toEqual([{ model: 'speech-stream', yuan: 0.01, alive }]);
    expect(checked).toEqual(['en']);
  });

  it('an unlimited budget is capped by AI_STREAM_MAX_SECONDS', async () => {
    const { live } = setup({ yuan: null, exhausted: false });
    expect((await live.open(key(), undefined, () => true)).maxSeconds).toBe(600);
  });

  it('refuses, before reserving, a key without the speech scope and a budget short of one second', async () => {
    const scoped = setup({ yuan: null, exhausted: false });
    const forbidden = await scoped.live
      .open(key(['chat']), 'en', () => true)
      .then(
        () => null,
        (e) => e,
      );
    expect(forbidden).toBeInstanceOf(GatewayError);
    expect(forbidden.code).toBe(GatewayErrorCode.ScopeNotAllowed);

    const poor = setup({ yuan: 0.0001, exhausted: false });
    const quota = await poor.live
      .open(key(), 'en', () => true)
      .then(
        () => null,
        (e) => e,
      );
    expect(quota.code).toBe(GatewayErrorCode.InsufficientQuota);
    expect([...scoped.reserved, ...poor.reserved]).toEqual([]);
  });

  it('bills the seconds received at the live price', async () => {
    const { live, settled } = setup({ yuan: null, exhausted: false });
    const session = await live.open(key(), 'en', () => true);
    await live.settle(session.reservation, 30, 'req-1');
    expect(settled).toEqual([
      {
        endpoint: '/v1/speech/stream',
        model: 'whisper-1',
        status: 'ok',
        costYuan: 0.015,
        seconds: 30,
        httpStatus: 101,
        requestId: 'req-1',
      },
    ]);
  });
});
