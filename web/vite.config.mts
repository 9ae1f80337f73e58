import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

/**
 * The web app (the account page and the operator console): one build into dist/web, served by membership at
 * `{base_url}/account/` and `{base_url}/console/` (apps/membership/src/web-app/web-app.ts). Built with a relative base: membership writes
 * a `<base href>` with its context path into index.html, so the same files work under any CONTEXT_PATH and
 * from deep links. `npm run web:dev` serves it at /account/ and forwards /api to a running membership.
 */
export default defineConfig(({ command }) => ({
  root: here,
  base: command === 'build' ? './' : '/account/',
  // Vite's own transform (oxc) compiles JSX with React's automatic runtime; no React plugin.
  oxc: { jsx: { runtime: 'automatic', importSource: 'react', development: command !== 'build' } },
  // A build is the production one even when the caller's NODE_ENV is 'test' (jest's global setup builds
  // through scripts/build.js): React's development build is twice the size and is not what is served.
  define: command === 'build' ? { 'process.env.NODE_ENV': JSON.stringify('production') } : {},
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    rolldownOptions: {
      // TanStack Query marks its modules "use client" (for React Server Components); meaningless in this app.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
  server: {
    proxy: { '/api': process.env.MEMBERSHIP_URL ?? 'http://127.0.0.1:8080' },
  },
}));
