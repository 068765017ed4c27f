import { exportText } from '../server/index.js';

// `switchyard config export`: the effective config (server/config-export.ts) on stdout, its
// warnings and errors on stderr.

/** Prints the effective config of `configPath`; 1 when it is invalid or its database cannot be read. */
export async function exportConfig(configPath: string): Promise<number> {
  const exported = await exportText(configPath, process.env);
  for (const warning of exported.warnings) process.stderr.write(`warning: ${warning}\n`);
  if (!exported.ok) {
    for (const error of exported.errors) process.stderr.write(`${error}\n`);
    return 1;
  }
  process.stdout.write(exported.text);
  return 0;
}
