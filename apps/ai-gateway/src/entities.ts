// Every TypeORM entity of the AI gateway (append new ones).
import { ApiKey } from './keys/api-key.entity';
import { Project } from './projects/project.entity';
import { UsageRecord } from './usage/usage-record.entity';

export const GATEWAY_ENTITIES: Array<new () => object> = [ApiKey, Project, UsageRecord];
