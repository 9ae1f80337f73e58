import { Injectable, PipeTransform } from '@nestjs/common';
import { openAiValidationPipe } from '@app/envelope';
import { quickAcceptEmbeddings } from './embeddings-quick-accept';
import { EmbeddingsRequest } from './dtos/embeddings.dtos';

const pipe = openAiValidationPipe();

/** The one validation of an embeddings body: plain common bodies pass the compiled quick check as they are, the rest the DTO's validation. */
export async function validateEmbeddingsRequest(raw: unknown): Promise<EmbeddingsRequest> {
  if (quickAcceptEmbeddings(raw)) return raw as EmbeddingsRequest;
  return pipe.transform(raw, { type: 'body', metatype: EmbeddingsRequest, data: undefined }) as Promise<EmbeddingsRequest>;
}

/** `@Body(EmbeddingsRequestPipe)`: the same validation on the route's Nest entry. */
@Injectable()
export class EmbeddingsRequestPipe implements PipeTransform {
  transform(value: unknown): Promise<EmbeddingsRequest> {
    return validateEmbeddingsRequest(value);
  }
}
