/**
 * The secure broker's TLS material: a fresh CA and a broker certificate for 127.0.0.1/localhost, made
 * with `openssl` (the keystore password passed in the environment, never on a command line).
 */
import { randomBytes } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InfraError } from '../local/errors.ts';
import { type RunResult, run } from '../process.ts';

const CERT_DAYS = 7;

interface Certificates {
  caFile: string;
  caPem: string;
  keystore: string;
  keystorePassword: string;
}

/** A fresh CA and a broker certificate for 127.0.0.1/localhost signed by it, as PEM (CA) and PKCS12 (broker). */
export async function makeCertificates(dir: string, env: NodeJS.ProcessEnv): Promise<Certificates> {
  const f = (name: string) => join(dir, name);
  const keystorePassword = randomBytes(18).toString('base64url');
  await writeFile(
    f('broker.ext'),
    ['subjectAltName=IP:127.0.0.1,DNS:localhost', 'extendedKeyUsage=serverAuth,clientAuth', 'keyUsage=critical,digitalSignature,keyEncipherment'].join('\n') +
      '\n',
  );
  const steps: string[][] = [
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      f('ca.key'),
      '-out',
      f('ca.pem'),
      '-days',
      String(CERT_DAYS),
      '-subj',
      '/CN=tao local test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('broker.key'), '-out', f('broker.csr'), '-subj', '/CN=127.0.0.1'],
    [
      'x509',
      '-req',
      '-in',
      f('broker.csr'),
      '-CA',
      f('ca.pem'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-out',
      f('broker.pem'),
      '-days',
      String(CERT_DAYS),
      '-extfile',
      f('broker.ext'),
    ],
    // The password travels in the environment, not on the command line.
    [
      'pkcs12',
      '-export',
      '-in',
      f('broker.pem'),
      '-inkey',
      f('broker.key'),
      '-certfile',
      f('ca.pem'),
      '-name',
      'broker',
      '-out',
      f('broker.p12'),
      '-passout',
      'env:TAO_SECURE_KEYSTORE_PASSWORD',
    ],
  ];
  for (const args of steps) {
    let r: RunResult;
    try {
      r = await run('openssl', args, { cwd: dir, env: { ...env, TAO_SECURE_KEYSTORE_PASSWORD: keystorePassword } });
    } catch (err) {
      throw new InfraError(
        'PREREQUISITE_MISSING',
        `secure broker: \`openssl\` is needed on PATH to make the test CA and broker certificate (${(err as Error).message})`,
        { cause: err },
      );
    }
    if (r.code !== 0)
      throw new InfraError('PROCESS_FAILED', `secure broker: openssl ${args[0]} failed (exit ${r.code}): ${r.output.trim().split('\n').slice(-3).join(' | ')}`);
  }
  await Promise.all(['ca.key', 'broker.key', 'broker.p12'].map((n) => chmod(f(n), 0o600)));
  return { caFile: f('ca.pem'), caPem: await readFile(f('ca.pem'), 'utf8'), keystore: f('broker.p12'), keystorePassword };
}
