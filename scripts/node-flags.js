// V8 flags every app process runs with: scripts/start.js passes them, the image sets them in NODE_OPTIONS
// (Dockerfile; test/deploy/manifests.e2e-spec.ts checks it has each), and the bench starts the apps with them
// (bench/lib/procs.js), so it measures what runs in production.
//
// --max-semi-space-size=64 (MiB): the young generation may grow to 64 MiB semi-spaces, not V8's 16 MiB.
// The gateway allocates most of what it handles per call (bodies, parsed JSON, answers) and drops it at the
// call's end; with small semi-spaces it collects the young generation every few dozen calls, each a pause of
// the event loop for every call in flight. Measured on 2 cores, same load with and without:
// - chat at c=64 (wrk, 8 s): garbage collection 0.24 s -> 0.12 s for ~10 900 calls; resident memory
//   167 MB -> 248 MB (the cost: more young generation kept between collections);
// - another key's 2048-input embeddings calls (8 callers): 252 young collections (0.74 s) -> 76 (0.31 s).
// Throughput and latency moved less than the machine's noise in most runs (docs/operations/performance.md).
'use strict';

module.exports = { NODE_FLAGS: ['--max-semi-space-size=64'] };
