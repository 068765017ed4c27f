import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

// A certificate authority made during a test with openssl, and certificates it signs: for
// https upstreams and authorities on loopback. Files land in `dir` as `<name>.key` and
// `<name>.pem` (the CA as `ca.key` and `ca.pem`), valid for a day.

function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A self-signed CA, `ca.key` and `ca.pem`. */
export function createTestCa(dir: string, commonName: string): void {
  openssl(dir, 'req', '-x509', ...EC_KEY, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', `/CN=${commonName}`);
}

/** A key and a certificate signed by the test CA, with the given name and extensions (`subjectAltName=…`, `extendedKeyUsage=…`). */
export function issueTestCertificate(dir: string, name: string, commonName: string, extensions: string): void {
  openssl(dir, 'req', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${commonName}`);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(
    dir,
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    `${name}.pem`,
    '-days',
    '1',
    '-extfile',
    `${name}.ext`,
  );
}
