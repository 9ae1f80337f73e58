import { Injectable } from '@nestjs/common';
import { vectorWorker } from '@app/llm';
import { Metrics } from '@app/platform';
import { Counter, Gauge } from 'prom-client';

/**
 * The embeddings worker's shared buffer in the app's Prometheus registry (libs/llm/src/vector-worker.ts): the bytes
 * answers being sent hold in it, and the answers that did not fit it (each then memory of its own on the main
 * thread, what the worker is there to avoid: a steady rise says the buffer is too small for the replica's bulk load).
 */
@Injectable()
export class EmbeddingsWorkerMetrics {
  readonly held: Gauge;
  readonly outside: Counter;

  constructor(metrics: Metrics) {
    this.held = new Gauge({
      name: 'ai_gateway_embeddings_worker_held_bytes',
      help: "Bytes of the embeddings worker's shared buffer held by answers not yet sent",
      registers: [metrics.registry],
      collect() {
        this.set(vectorWorker().heldBytes);
      },
    });
    let counted = 0;
    this.outside = new Counter({
      name: 'ai_gateway_embeddings_worker_own_buffers_total',
      help: "Embeddings answers that did not fit the worker's shared buffer (given memory of their own)",
      registers: [metrics.registry],
      collect() {
        const n = vectorWorker().ownBuffers;
        if (n > counted) this.inc(n - counted);
        counted = n;
      },
    });
  }
}
