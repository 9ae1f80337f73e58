export * from './engine-worker';
export * from './image/image-decoder';
export * from './audio/audio-codec';
export * from './ocr/ocr.engine';
export * from './vision/vision.engine';
export * from './tts/speech-synthesis.engine';
export * from './embeddings/text-embedding.engine';
export * from './stt/pocketsphinx.engine';
