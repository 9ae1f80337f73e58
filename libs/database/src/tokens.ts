/** The resolved PostgreSQL URL the app runs on (DATABASE_URL or the embedded default). */
export const DATABASE_URL = Symbol('DATABASE_URL');
