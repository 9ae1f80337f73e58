// The membership baseline: a NestJS 11 hello-world (Express platform, no auth, no database, no
// logging), run as its own process like the app. Prints {"port":N} on stdout.
'use strict';
require('reflect-metadata');
const { Controller, Get, Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');

class HelloController {
  hello() {
    return { code: 200, message: 'success', data: { hello: 'world' } };
  }
}
Reflect.decorate(
  [Get('hello')],
  HelloController.prototype,
  'hello',
  Object.getOwnPropertyDescriptor(HelloController.prototype, 'hello'),
);
Controller()(HelloController);
class HelloModule {}
Module({ controllers: [HelloController] })(HelloModule);

(async () => {
  const app = await NestFactory.create(HelloModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  process.stdout.write(`${JSON.stringify({ port: app.getHttpServer().address().port })}\n`);
  process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
})().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
