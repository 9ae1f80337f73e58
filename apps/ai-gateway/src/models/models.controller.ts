import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { LlmRouter, ModelInfo } from '@app/llm';
import { ApiKeyClaims, apiKeyClaims, modelAllowed } from '../keys/key-scopes';
import { ApiOpenAiErrors } from '../http/openai-error.doc';

export class ModelResponse {
  @ApiProperty({ example: 'vendor-gpt-4-mini' }) id: string;
  @ApiProperty({ example: 'model' }) object: 'model';
  @ApiProperty({ example: 1795400000, description: 'Unix seconds (when this gateway loaded the model list)' })
  created: number;
  @ApiProperty({ example: 'vendor' }) owned_by: string;
  @ApiProperty({ example: 'chat', enum: ['chat', 'embeddings'], description: 'Gateway extension: endpoint family' })
  kind: 'chat' | 'embeddings';
  @ApiProperty({
    example: 128000,
    description: 'Gateway extension: context length (chat) or max tokens per input (embeddings)',
  })
  context_length: number;
}

export class ModelListResponse {
  @ApiProperty({ example: 'list' }) object: 'list';
  @ApiProperty({ type: [ModelResponse] }) data: ModelResponse[];
}

const LOADED_AT = Math.floor(Date.now() / 1000);

/** The key may use the model: allowed by name, and its endpoint family is in the key's scopes. */
function usable(claims: ApiKeyClaims, m: ModelInfo): boolean {
  return modelAllowed(claims, m.name) && (!claims.scopes || claims.scopes.includes(m.kind));
}

function toModel(m: ModelInfo): ModelResponse {
  return {
    id: m.name,
    object: 'model',
    created: LOADED_AT,
    owned_by: m.ownedBy,
    kind: m.kind,
    context_length: m.contextLength,
  };
}

@ApiTags('models')
@Controller('v1/models')
export class ModelsController {
  constructor(private readonly router: LlmRouter) {}

  @Get()
  @ApiOperation({
    summary: 'Models this key may use: served by a configured upstream, in its model allowlist and its scopes',
  })
  @ApiOkResponse({ type: ModelListResponse })
  @ApiOpenAiErrors(401)
  list(@CurrentPrincipal() principal: Principal): ModelListResponse {
    const claims = apiKeyClaims(principal);
    return {
      object: 'list',
      data: this.router
        .servedModels()
        .filter((m) => usable(claims, m))
        .map(toModel),
    };
  }

  @Get(':model')
  @ApiOperation({ summary: 'One model, if this key may use it' })
  @ApiOkResponse({ type: ModelResponse })
  @ApiOpenAiErrors(401, 404)
  get(@CurrentPrincipal() principal: Principal, @Param('model') model: string): ModelResponse {
    const claims = apiKeyClaims(principal);
    const info = this.router.modelInfo(model);
    if (!info || !this.router.isServed(model) || !usable(claims, info)) {
      throw new GatewayError(GatewayErrorCode.ModelNotVisible, { model });
    }
    return toModel(info);
  }
}
