// A real OpenID Connect / OAuth 2.0 provider (panva/oidc-provider, ESM-only) run as a child process
// by the e2e tests. Protocol with the parent over IPC:
//   child -> {type:'listening', port}
//   parent -> {type:'configure', clients:[...]}   child -> {type:'ready', issuer}
//   parent -> {type:'account', accountId} | {type:'deny', value:true}
// The interaction (login + consent) is answered automatically for the current account, or
// refused with access_denied when `deny` is set, so tests can drive the flow over plain HTTP.
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const accounts = {
  alice: {
    sub: 'alice',
    name: 'Alice Liddell',
    preferred_username: 'alice',
    picture: 'https://img.example/alice.png',
    email: 'alice@example.com',
  },
  bob: {
    sub: 'bob',
    name: 'Bob',
    preferred_username: 'bob',
    picture: 'https://img.example/bob.png',
    email: 'bob@example.com',
  },
};
let currentAccount = 'alice';
let deny = false;
let provider;
let callback;

const server = createServer(async (req, res) => {
  if (!provider) {
    res.statusCode = 503;
    return res.end('not configured');
  }
  try {
    if (req.url.startsWith('/interaction/')) return await interaction(req, res);
    return callback(req, res);
  } catch (err) {
    res.statusCode = 500;
    res.end(String(err && err.message));
  }
});

async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  if (deny) {
    deny = false;
    return provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: 'End-User aborted interaction' },
      { mergeWithLastSubmission: false },
    );
  }
  if (details.prompt.name === 'login') {
    return provider.interactionFinished(
      req,
      res,
      { login: { accountId: currentAccount } },
      { mergeWithLastSubmission: false },
    );
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
  const missing = details.prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  if (missing.missingResourceScopes)
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes))
      grant.addResourceScope(indicator, scopes.join(' '));
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

process.on('message', (msg) => {
  if (msg.type === 'configure') {
    const issuer = `http://127.0.0.1:${server.address().port}`;
    provider = new Provider(issuer, {
      clients: msg.clients,
      pkce: { required: () => true },
      features: { devInteractions: { enabled: false } },
      interactions: { url: (_ctx, i) => `/interaction/${i.uid}` },
      claims: { openid: ['sub'], profile: ['name', 'preferred_username', 'picture'], email: ['email'] },
      cookies: { keys: ['test-cookie-key'] },
      findAccount: (_ctx, id) => (accounts[id] ? { accountId: id, claims: () => accounts[id] } : undefined),
      loadExistingGrant: async (ctx) => {
        const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
        return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
      },
    });
    provider.on('server_error', (_ctx, err) => process.stderr.write(`oidc-provider server_error: ${err.stack}\n`));
    callback = provider.callback();
    process.send({ type: 'ready', issuer });
  } else if (msg.type === 'account') {
    currentAccount = msg.accountId;
  } else if (msg.type === 'deny') {
    deny = !!msg.value;
  }
});
process.on('disconnect', () => process.exit(0));

server.keepAliveTimeout = 120_000; // as test/support/upstreams/fake-upstream.ts says why
server.listen(0, '127.0.0.1', () => process.send({ type: 'listening', port: server.address().port }));
