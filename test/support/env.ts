// Quiet, test-mode defaults for every e2e suite (override with TEST_LOG_LEVEL=debug when investigating).
process.env.NODE_ENV = 'test';
process.env.LOG_LEVEL = process.env.TEST_LOG_LEVEL || 'silent';
