// Every TypeORM entity of the membership app (append new ones).
export const MEMBERSHIP_ENTITIES: Function[] = [];
