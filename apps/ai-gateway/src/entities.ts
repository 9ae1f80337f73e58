// Every TypeORM entity of the AI gateway (append new ones).
export const GATEWAY_ENTITIES: Function[] = [];
