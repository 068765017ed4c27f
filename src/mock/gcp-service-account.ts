import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { METADATA_PROJECT_ID } from './gcp-metadata.js';

// A service account key file the mock's Vertex token endpoint accepts: the JSON key Google's
// console downloads (type, project_id, private_key_id, private_key, client_email, token_uri,
// ...), for a key pair made here. The mock verifies each JWT against its public half, so the
// file works exactly as a real key does against Google, and a JWT signed by any other key is
// refused.

export const MOCK_SERVICE_ACCOUNT = `switchyard-mock@${METADATA_PROJECT_ID}.iam.gserviceaccount.com`;

export interface MockServiceAccount {
  /** The key's public half (PEM), for `gcpPublicKeyPem`. */
  readonly publicKeyPem: string;
  /** Whether FILE already held a key, which is used as it is. */
  readonly reused: boolean;
  /** Writes FILE (mode 0600) naming `<origin>/token`; does nothing for a reused file. */
  write(origin: string): void;
}

/**
 * The key in FILE, when it holds one (so a restarted mock accepts the file a gateway already
 * reads), or a new key pair to be written there once the mock knows its origin.
 */
export function mockServiceAccount(file: string): MockServiceAccount {
  if (existsSync(file)) {
    let key: { private_key?: unknown };
    try {
      key = JSON.parse(readFileSync(file, 'utf8')) as typeof key;
    } catch {
      // Never the parser's message: it may quote the file, which may hold a private key.
      throw new TypeError(`${file} exists and is not a JSON service account key; name a new file to write one`);
    }
    try {
      if (typeof key?.private_key !== 'string') throw new Error('no private_key');
      const publicKeyPem = createPublicKey(createPrivateKey(key.private_key)).export({ type: 'spki', format: 'pem' }).toString();
      return { publicKeyPem, reused: true, write: () => undefined };
    } catch {
      throw new TypeError(`${file} exists and holds no usable private_key; name a new file to write one`);
    }
  }
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    reused: false,
    write(origin) {
      const account = {
        type: 'service_account',
        project_id: METADATA_PROJECT_ID,
        private_key_id: randomBytes(20).toString('hex'),
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        client_email: MOCK_SERVICE_ACCOUNT,
        client_id: String(BigInt(`0x${randomBytes(8).toString('hex')}`)),
        auth_uri: 'https://accounts.google.com/o/oauth2/auth',
        token_uri: `${origin}/token`,
        universe_domain: 'googleapis.com',
      };
      // `wx`: never over a file that appeared meanwhile; 0600, as a private key deserves.
      writeFileSync(file, `${JSON.stringify(account, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    },
  };
}
