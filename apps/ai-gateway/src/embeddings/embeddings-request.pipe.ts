import { Injectable, PipeTransform } from '@nestjs/common';
import { GatewayError, GatewayErrorCode, openAiValidationPipe } from '../errors';
import { quickAcceptEmbeddings } from './embeddings-quick-accept';
import { EmbeddingsRequest } from './dtos/embeddings.dto';
import { isTokenInput, tokenInputProblem } from './token-input';

const pipe = openAiValidationPipe();

/** The one validation of an embeddings body: plain common bodies pass the compiled quick check as they are, the rest the DTO's validation. */
export async function validateEmbeddingsRequest(raw: unknown): Promise<EmbeddingsRequest> {
  if (quickAcceptEmbeddings(raw)) return raw as EmbeddingsRequest;
  // Token arrays are checked here first, so a bad id is answered naming its input (`input[3]`).
  const input = typeof raw === 'object' && raw !== null ? (raw as { input?: unknown }).input : undefined;
  if (isTokenInput(input)) {
    const problem = tokenInputProblem(input);
    if (problem) throw new GatewayError(GatewayErrorCode.InvalidValue, problem);
  }
  return pipe.transform(raw, {
    type: 'body',
    metatype: EmbeddingsRequest,
    data: undefined,
  }) as Promise<EmbeddingsRequest>;
}

/** `@Body(EmbeddingsRequestPipe)`: the same validation on the route's Nest entry. */
@Injectable()
export class EmbeddingsRequestPipe implements PipeTransform {
  transform(value: unknown): Promise<EmbeddingsRequest> {
    return validateEmbeddingsRequest(value);
  }
}
