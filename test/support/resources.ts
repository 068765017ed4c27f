import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { type MockProvider, startMockProvider } from '../../src/mock/index.js';
import { type GatewayProcess, startGatewayProcess } from './gateway-process.js';

export interface FileResources {
  /** A real gateway process, stopped in `after`. */
  startGw(config: object | string, options?: Parameters<typeof startGatewayProcess>[1]): Promise<GatewayProcess>;
  /** A mock provider, closed in `after` once every gateway has stopped. */
  startMock(options: Parameters<typeof startMockProvider>[0]): Promise<MockProvider>;
  /** A fresh temp dir, removed in `after`. */
  tempDir(): string;
  /** An in-process gateway (anything that holds connections to the mocks): closed with the gateways. */
  addGateway(close: () => Promise<unknown>): void;
  /** A server the gateways connect to, like a mock: closed after the gateways. */
  addUpstream(close: () => Promise<unknown>): void;
}

/**
 * What one test file starts, closed once in the file's `after`. Gateways go first: they hold
 * connections to the mocks, and a mock closed under them would turn their drain into errors.
 * Call it once, at the top level of a test file.
 */
export function fileResources(prefix = 'switchyard-test-'): FileResources {
  const cleanup: Array<() => Promise<unknown>> = [];
  const dirs: string[] = [];
  after(async () => {
    for (const close of cleanup.splice(0).reverse()) await close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return {
    async startGw(config, options = {}) {
      const gw = await startGatewayProcess(config, options);
      cleanup.push(() => gw.stop());
      return gw;
    },
    async startMock(options) {
      const mock = await startMockProvider(options);
      cleanup.unshift(() => mock.close());
      return mock;
    },
    tempDir() {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
    addGateway(close) {
      cleanup.push(close);
    },
    addUpstream(close) {
      cleanup.unshift(close);
    },
  };
}
