import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { GatewayError } from '../errors';
import { Tokenizer } from '../tokenizer/tokenizer';
import { CreateCompletion } from './create-completion.service';
import { CompletionRequest } from './dtos/completion.dto';
import { callContext } from '../../../../test/ai-gateway/use-case-fixtures';

describe('CreateCompletion.prepare: what is counted and reserved', () => {
  const info = {
    name: 'm',
    kind: 'chat',
    contextLength: 100_000,
    encoding: 'cl100k_base',
    price: { inputPer1k: 1, outputPer1k: 2 },
    ownedBy: 'x',
  };
  const router = { modelInfo: () => info, isServed: () => true, servesTextCompletions: () => true };
  const principal = { kind: 'api-key', id: 'k1', claims: { scopes: null, models: null } } as any;
  const tokenizer = new Tokenizer();
  let reserve: jest.Mock;
  let svc: CreateCompletion;
  const ctx = callContext('req-1', 'completions');
  const prepare = (body: Record<string, unknown>) => (svc as any).prepare(principal, { model: 'm', ...body }, ctx);

  beforeEach(() => {
    reserve = jest.fn(async () => ({ id: 'r' }));
    svc = new CreateCompletion(router as any, tokenizer, { reserve } as any);
  });

  it('counts the suffix (billed upstream as prompt) into every prompt’s context check and the reservation', async () => {
    const plain = await prepare({ prompt: ['a', 'b'], max_tokens: 1 });
    const withSuffix = await prepare({ prompt: ['a', 'b'], max_tokens: 1, suffix: ' word'.repeat(1000) });
    expect(withSuffix.promptTokens - plain.promptTokens).toBe(2 * 1000);
    expect(reserve.mock.calls[1][1].yuan).toBeGreaterThan(reserve.mock.calls[0][1].yuan);
    expect(reserve.mock.calls[1][1].tokens).toBeGreaterThan(reserve.mock.calls[0][1].tokens);
    const tooLong: any = await prepare({ prompt: 'hi', max_tokens: 16, suffix: ' word'.repeat(100_000) }).catch(
      (e: unknown) => e,
    );
    expect(tooLong).toBeInstanceOf(GatewayError);
    expect(tooLong.getStatus()).toBe(400);
    expect(tooLong.getResponse()).toMatchObject({ errorCode: 'context_length_exceeded', param: 'suffix' });
    expect(reserve).toHaveBeenCalledTimes(2);
  });

  it('shares one counting pace across the prompts: 64 prompts of 16k characters give the event loop turns', async () => {
    const before = tokenizer.yields;
    await prepare({ prompt: Array.from({ length: 64 }, () => 'ab '.repeat(5_400)), max_tokens: 1 });
    // 64 × 16 200 characters: a turn once 16 384 are pending, so one every second prompt (31); a fresh
    // pace per prompt never reached 16 384 and gave none.
    expect(tokenizer.yields - before).toBeGreaterThanOrEqual(30);
  });

  it('bounds logit_bias like chat: token-id keys, values -100..100, at most 1024 entries', () => {
    const errors = (logit_bias: unknown) =>
      validateSync(plainToInstance(CompletionRequest, { model: 'm', prompt: 'x', logit_bias })).map((e) => e.property);
    expect(errors({ '50256': -100, '1': 100 })).toEqual([]);
    expect(errors({ abc: 1 })).toEqual(['logit_bias']);
    expect(errors({ '1': 101 })).toEqual(['logit_bias']);
    expect(errors({ '1': 'x' })).toEqual(['logit_bias']);
    expect(errors(Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [String(i), 1])))).toEqual(['logit_bias']);
  });
});
