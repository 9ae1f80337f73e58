import { SharedState1732240000000 } from '@app/database';

// Every migration of the AI gateway, in order (append new ones).
export const GATEWAY_MIGRATIONS: Function[] = [SharedState1732240000000];
