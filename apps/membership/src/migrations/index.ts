import { SharedState1732240000000 } from '@app/database';

// Every migration of the membership app, in order (append new ones).
export const MEMBERSHIP_MIGRATIONS: Function[] = [SharedState1732240000000];
