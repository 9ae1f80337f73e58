// Two projects: unit specs beside the code, e2e suites under test/ against a real PostgreSQL.
const moduleNameMapper = {
  '^@app/(envelope|auth|database|platform|llm|engines|messaging|storage|wechat|audit|webhooks)(/(.*))?$':
    '<rootDir>/libs/$1/src$2',
};
const transform = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.spec.json' }],
};
const common = {
  rootDir: __dirname,
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
  transform,
  moduleNameMapper,
};
module.exports = {
  testTimeout: 60000,
  // A suite that fails half-way can leave a server or timer behind; never let that hang CI.
  forceExit: true,
  // Test files run in a worker process that is replaced once it holds more than this after a file: each file
  // loads the apps' module graph afresh, and what one leaves reachable (process listeners, global providers)
  // added up in one long-lived process to an out-of-memory crash of a whole run (3.4 GB heap after ~145 of
  // 226 files on a 2-core machine, where Jest otherwise runs every file in its own process, in band).
  workerIdleMemoryLimit: '1GB',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/apps/**/*.spec.ts', '<rootDir>/libs/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      setupFiles: ['<rootDir>/test/support/env.ts'],
    },
  ],
};
