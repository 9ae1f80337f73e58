/** The ObjectStorage (@app/storage) chosen by STORAGE_DRIVER. */
export const OBJECT_STORAGE = Symbol('OBJECT_STORAGE');
