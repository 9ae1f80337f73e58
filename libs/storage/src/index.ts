export * from './object-storage';
export * from './local-disk.storage';
export * from './s3.storage';
export * from './storage-for';
export * from './serve-object';
export * from './download-slots';
