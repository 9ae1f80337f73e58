#!/usr/bin/env node
// Adds every variable declared in the config classes that the deployment files do not list yet:
// deploy/k8s/configmap.yaml and secret.yaml (credentials) and docker-compose.yml, each as "unset"
// (empty: the app's default applies), with the class's doc comment. Edit the value afterwards if the
// deployment needs one. `--check` only reports (exit 1 when something is missing).
// test/deploy/manifests.e2e-spec.ts fails while a variable is missing, and names this script.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const CLASSES = {
  common: 'libs/platform/src/config/base.config.ts',
  membership: 'apps/membership/src/config/membership.config.ts',
  'ai-gateway': 'apps/ai-gateway/src/config/gateway.config.ts',
};
// Keep in step with SECRET_NAME in test/deploy/deploy-files.ts.
const SECRET_NAME =
  /^(?!.*_MIN_LENGTH$).*(SECRET|PASSWORD|PRIVATE_KEY|API_KEY|ACCESS_KEY|_TOKEN$|^DATABASE_URL$|^REDIS_URL$)/;
// Where each group goes: marker comments inside the files ("# sync-env: <target>").
const TARGETS = {
  common: { configmap: 'platform-common', secret: 'platform-secrets', compose: 'common' },
  membership: { configmap: 'membership', secret: 'membership-secrets', compose: 'membership' },
  'ai-gateway': { configmap: 'ai-gateway', secret: 'ai-gateway-secrets', compose: 'gateway' },
};

/** [{name, doc}] of the properties a config class declares, in order. */
function declared(file, base = root) {
  const text = fs.readFileSync(path.join(base, file), 'utf8');
  const out = [];
  let doc = '';
  for (const line of text.split('\n')) {
    const comment = /^\s*\/\*\*\s*(.*?)\s*\*\/\s*$/.exec(line);
    if (comment) doc = comment[1];
    const prop = /^\s{2}([A-Z][A-Z0-9_]*)\??\s*[:=]/.exec(line);
    if (prop) {
      out.push({ name: prop[1], doc });
      doc = '';
    }
  }
  return out;
}

function insertAtMarker(text, marker, lines, file) {
  const re = new RegExp(`^([ \\t]*)# sync-env: ${marker}\\b.*$`, 'm');
  const m = re.exec(text);
  if (!m) throw new Error(`${file}: marker "# sync-env: ${marker}" not found`);
  const indent = m[1];
  const block = lines.map((l) => indent + l).join('\n') + '\n';
  return text.slice(0, m.index) + block + text.slice(m.index);
}

function run({ check, base = root, out = process.stdout }) {
  const files = {
    configmap: path.join(base, 'deploy/k8s/configmap.yaml'),
    secret: path.join(base, 'deploy/k8s/secret.yaml'),
    compose: path.join(base, 'docker-compose.yml'),
  };
  const text = Object.fromEntries(Object.entries(files).map(([k, f]) => [k, fs.readFileSync(f, 'utf8')]));
  const yaml = require('js-yaml');
  // Keys each ConfigMap/Secret and each compose service already provide.
  const k8sKeys = new Map();
  for (const t of [text.configmap, text.secret]) {
    yaml.loadAll(t, (doc) => {
      if (doc && doc.metadata) k8sKeys.set(doc.metadata.name, new Set(Object.keys({ ...doc.data, ...doc.stringData })));
    });
  }
  const services = yaml.load(text.compose).services;
  const composeKeys = (svc) => new Set(Object.keys((services[svc] && services[svc].environment) || {}));
  const apps = { common: ['membership', 'ai-gateway'], membership: ['membership'], 'ai-gateway': ['ai-gateway'] };
  const missing = [];
  for (const [group, file] of Object.entries(CLASSES)) {
    const target = TARGETS[group];
    const k8sLines = { configmap: [], secret: [] };
    const composeLines = [];
    for (const { name, doc } of declared(file, base)) {
      const comment = doc ? [`# ${doc.replace(/\s+/g, ' ')}`] : [];
      const kind = SECRET_NAME.test(name) ? 'secret' : 'configmap';
      // An app gets the common ConfigMap/Secret and its own.
      const inK8s = apps[group].every((app) =>
        [TARGETS.common.configmap, TARGETS.common.secret, TARGETS[app].configmap, TARGETS[app].secret].some((n) =>
          k8sKeys.get(n)?.has(name),
        ),
      );
      if (!inK8s) {
        missing.push(`${name} -> deploy/k8s/${kind}.yaml (${target[kind]})`);
        k8sLines[kind].push(...comment, `${name}: ""`);
      }
      if (!apps[group].every((app) => composeKeys(app).has(name))) {
        missing.push(`${name} -> docker-compose.yml (${target.compose})`);
        composeLines.push(...comment, `${name}: \${${name}:-}`);
      }
    }
    if (k8sLines.configmap.length)
      text.configmap = insertAtMarker(text.configmap, target.configmap, k8sLines.configmap, 'configmap.yaml');
    if (k8sLines.secret.length)
      text.secret = insertAtMarker(text.secret, target.secret, k8sLines.secret, 'secret.yaml');
    if (composeLines.length)
      text.compose = insertAtMarker(text.compose, target.compose, composeLines, 'docker-compose.yml');
  }
  if (!missing.length) {
    out.write('deployment files list every configuration variable\n');
    return 0;
  }
  out.write(`${check ? 'missing' : 'added'}:\n${missing.map((m) => `  ${m}`).join('\n')}\n`);
  if (check) return 1;
  for (const [k, f] of Object.entries(files)) fs.writeFileSync(f, text[k]);
  return 0;
}

module.exports = { declared, run };
if (require.main === module) process.exit(run({ check: process.argv.includes('--check') }));
