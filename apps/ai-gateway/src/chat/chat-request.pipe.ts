import { Injectable, PipeTransform } from '@nestjs/common';
import { GatewayError, GatewayErrorCode, openAiValidationPipe } from '../errors';
import { quickAcceptChat } from './chat-quick-accept';
import { checkChatShape, checkUnknown, ShapeError, splitKnown } from './chat-shape';
import { ChatCompletionRequest } from './dtos/chat-completion.dto';

const pipe = openAiValidationPipe();

function refuse(e: ShapeError): never {
  throw new GatewayError(GatewayErrorCode.InvalidValue, { message: e.message, param: e.param });
}

/**
 * The one validation of a chat completions body (the route's direct and Nest entries alike): plain
 * common bodies pass the compiled quick check (chat-quick-accept.ts) as they are; the rest get
 * known fields strictly (structured ones by chat-shape.ts with the exact `param`, scalars by the DTO's
 * class-validator decorators), unknown top-level fields bounded (count, size, depth, no length or cost
 * levers) and kept on the result for the deployment's unknownFields policy (openai-client.ts).
 */
export async function validateChatRequest(raw: unknown): Promise<ChatCompletionRequest> {
  return quickAcceptChat(raw) ? (raw as ChatCompletionRequest) : validateChatRequestFully(raw);
}

/** The full validation (what the quick check must agree with: http/quick-checks.spec.ts). */
export async function validateChatRequestFully(raw: unknown): Promise<ChatCompletionRequest> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return pipe.transform(raw, {
      type: 'body',
      metatype: ChatCompletionRequest,
      data: undefined,
    }) as Promise<ChatCompletionRequest>;
  }
  const { known, unknown } = splitKnown(raw as Record<string, unknown>);
  const unknownError = checkUnknown(unknown);
  if (unknownError) refuse(unknownError);
  const shapeError = checkChatShape(known);
  if (shapeError) refuse(shapeError);
  const dto = (await pipe.transform(known, {
    type: 'body',
    metatype: ChatCompletionRequest,
    data: undefined,
  })) as ChatCompletionRequest;
  for (const k of Object.keys(unknown))
    Object.defineProperty(dto, k, { value: unknown[k], enumerable: true, writable: true, configurable: true });
  return dto;
}

/** `@Body(ChatRequestPipe)`: the route's parameter is typed `object` so the global pipe leaves it to this one. */
@Injectable()
export class ChatRequestPipe implements PipeTransform {
  transform(value: unknown): Promise<ChatCompletionRequest> {
    return validateChatRequest(value);
  }
}
