export * from './fake-upstream';
