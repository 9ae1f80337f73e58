import { ApiProperty } from '@nestjs/swagger';

/** Calls of the last hour that went to one deployment, from the usage ledger (every replica's calls). */
export class DeploymentWindowStats {
  @ApiProperty({ example: 120, description: 'Calls that reached this deployment (cached answers excluded)' })
  requests: number;
  @ApiProperty({
    example: 3,
    description: 'Of those, failed with a 5xx, a 429 or no answer (timeout, refused connection)',
  })
  errors: number;
  @ApiProperty({ example: 0.025, nullable: true, type: Number, description: 'errors / requests; null without calls' })
  error_rate: number | null;
  @ApiProperty({ example: 820, nullable: true, type: Number, description: 'Median latency (ms); null without calls' })
  latency_p50_ms: number | null;
  @ApiProperty({
    example: 2400,
    nullable: true,
    type: Number,
    description: '95th percentile latency (ms); null without calls',
  })
  latency_p95_ms: number | null;
}

/** This replica's router state of a deployment: cooldowns are kept per process (libs/llm/src/router.ts). */
export class DeploymentCooldown {
  @ApiProperty({ example: false }) cooling_down: boolean;
  @ApiProperty({
    example: null,
    nullable: true,
    type: String,
    description: 'When the cooldown ends (ISO 8601); null when not cooling down',
  })
  until: string | null;
}

export class UpstreamDeployment {
  @ApiProperty({
    example: 'primary',
    description: "Deployment name in the providers file (the ledger's provider column)",
  })
  name: string;
  @ApiProperty({ example: 'openai', enum: ['openai', 'anthropic', 'local'] }) type: string;
  @ApiProperty({
    example: ['vendor-gpt-4', 'vendor-gpt-4-mini'],
    type: [String],
    description: 'Public model names it serves',
  })
  models: string[];
  @ApiProperty({ example: 1, description: 'Routing weight (0: used only as a fallback)' }) weight: number;
  @ApiProperty({ type: DeploymentCooldown, description: 'State on the replica that answered (`replica`)' })
  cooldown: DeploymentCooldown;
  @ApiProperty({ type: DeploymentWindowStats, description: 'The last hour, all replicas' })
  last_hour: DeploymentWindowStats;
}

export class UpstreamsResponse {
  @ApiProperty({ example: 'list' }) object: 'list';
  @ApiProperty({
    example: 'gateway-7f9c:1:3fa1b2c4',
    description: 'The replica (host:pid:boot id) whose cooldown state this is; each replica keeps its own',
  })
  replica: string;
  @ApiProperty({ example: '2026-11-22T07:00:00.000Z', description: 'Start of the window of `last_hour`' })
  window_start: string;
  @ApiProperty({ example: '2026-11-22T08:00:00.000Z' }) window_end: string;
  @ApiProperty({
    type: DeploymentWindowStats,
    description: "The last hour over all deployments (the console overview's latency)",
  })
  overall: DeploymentWindowStats;
  @ApiProperty({ type: [UpstreamDeployment], description: 'In providers file order' }) data: UpstreamDeployment[];
}
