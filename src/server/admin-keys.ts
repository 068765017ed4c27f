import type { ManagedRecords } from '../database/index.js';
import type { Keyring } from '../live/index.js';
import { configKeyView, keyView, mayRead, noKey, seeKey, teamOfRole } from '../managed/index.js';
import type { Services } from '../request/index.js';
import type { V1Request } from './admin-caller.js';
import { configTag, pageOf, sendObject, sendPage, tagOf } from './admin-http.js';

// The keys under /admin/v1/keys, read: a list and one key, the config file's beside the
// database's. Their writes are managed/'s (admin-v1.ts maps them).

export async function listKeys(svc: Services, a: V1Request, records: ManagedRecords, keyring: Keyring): Promise<void> {
  const { limit, after } = pageOf(a.req);
  const url = new URL(a.req.url ?? '/', 'http://admin');
  const own = teamOfRole(a.caller);
  const asked = url.searchParams.get('team');
  if (own !== null && asked !== null && asked !== own) mayRead(a.caller, asked);
  const team = own ?? asked ?? undefined;
  const revoked = url.searchParams.get('revoked') === 'true';
  const fromConfig = keyring.fileKeys
    .filter((k) => (after === undefined || k.id > after) && (team === undefined || k.team === team))
    .sort((x, y) => (x.id < y.id ? -1 : 1))
    .map((k) => ({ id: k.id, view: configKeyView(k, svc.keysUsed.lastUsed(k.id)) }));
  const fromDatabase = (
    await records.listKeys({
      limit: limit + 1,
      ...(after === undefined ? {} : { after }),
      ...(team === undefined ? {} : { team }),
      revoked,
    })
  ).map((k) => ({ id: k.id, view: keyView(k) }));
  sendPage(a.res, [...fromConfig, ...fromDatabase], limit);
}

export async function getKey(svc: Services, a: V1Request, records: ManagedRecords, keyring: Keyring, id: string): Promise<void> {
  const fromConfig = keyring.fileKeys.find((k) => k.id === id);
  if (fromConfig !== undefined) {
    seeKey(a.caller, id, fromConfig.team);
    return sendObject(a.res, 200, configKeyView(fromConfig, svc.keysUsed.lastUsed(fromConfig.id)), configTag(keyring));
  }
  const key = await records.key(id);
  if (key === undefined) throw noKey(id);
  seeKey(a.caller, id, key.team);
  sendObject(a.res, 200, keyView(key), tagOf(key.version));
}
