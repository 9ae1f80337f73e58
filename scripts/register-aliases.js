// Resolves `@app/<lib>` imports of the compiled code to dist/libs/<lib>/src at run time.
const Module = require('module');
const path = require('path');
const distRoot = path.resolve(__dirname, '..', 'dist');
const original = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  const m = /^@app\/(envelope|auth|database|platform|llm|engines|messaging|storage|wechat)(\/.*)?$/.exec(request);
  if (m) request = path.join(distRoot, 'libs', m[1], 'src', m[2] || '');
  return original.call(this, request, ...rest);
};
