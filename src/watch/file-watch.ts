import { type FSWatcher, statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';

export interface FileWatchOptions {
  /** The watched file's path, as configured: never resolved, so symlink swaps stay visible. */
  readonly file: string;
  readonly debounceMs: number;
  /** A slow re-check that catches lost events and a directory that was deleted and recreated. */
  readonly recheckMs: number;
  readonly onChange: (cause: 'event' | 'recheck') => void;
}

/**
 * Watches a file through its PARENT directory. Kubernetes updates a mounted ConfigMap by
 * swapping the `..data` symlink, and editors save by rename; neither changes the inode a
 * watch on the file itself would follow. Only events that name the file, or the kubelet's
 * `..data` swap, count: the directory may hold other busy files (the gateway's own log,
 * say), and a reload for each of their writes would never stop. Debounced, so a burst
 * costs one reload; the slow re-check still catches anything an event missed.
 */
export class FileWatch {
  readonly #options: FileWatchOptions;
  #watcher: FSWatcher | null = null;
  /**
   * The watched directory's identity (device, inode, birth time). A recreated directory
   * needs a new watch; ext4 often hands it the same inode number, hence the birth time.
   */
  #directoryId = '';
  #debounce: NodeJS.Timeout | null = null;
  #recheck: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(options: FileWatchOptions) {
    this.#options = options;
  }

  start(): void {
    this.#attach();
    if (this.#options.recheckMs > 0) {
      this.#recheck = setInterval(() => {
        // A watcher lost with its directory comes back once the directory does.
        if (this.#watcher !== null && directoryId(this.#options.file) !== this.#directoryId) this.#detach();
        if (this.#watcher === null) this.#attach();
        this.#options.onChange('recheck');
      }, this.#options.recheckMs);
      this.#recheck.unref();
    }
  }

  close(): void {
    this.#closed = true;
    if (this.#debounce !== null) clearTimeout(this.#debounce);
    if (this.#recheck !== null) clearInterval(this.#recheck);
    this.#debounce = null;
    this.#recheck = null;
    this.#detach();
  }

  #attach(): void {
    if (this.#closed || this.#watcher !== null) return;
    try {
      this.#directoryId = directoryId(this.#options.file);
      const watcher = watch(dirname(this.#options.file), { persistent: false });
      const names = relevantNames(this.#options.file);
      watcher.on('change', (_event, filename) => {
        // An event about the directory itself going away: drop the dead watch now, so the
        // next re-check attaches to the new directory.
        if (directoryId(this.#options.file) !== this.#directoryId) {
          this.#detach();
          this.#schedule();
          return;
        }
        // Some platforms report no name: count the event rather than risk missing a change.
        if (filename === null || names.has(String(filename))) this.#schedule();
      });
      watcher.on('error', () => {
        this.#detach();
        this.#schedule();
      });
      this.#watcher = watcher;
    } catch {
      // The directory is missing: the re-check timer keeps trying.
    }
  }

  #detach(): void {
    const watcher = this.#watcher;
    this.#watcher = null;
    if (watcher !== null) {
      watcher.removeAllListeners();
      watcher.on('error', () => undefined);
      watcher.close();
    }
  }

  #schedule(): void {
    if (this.#closed) return;
    if (this.#debounce !== null) clearTimeout(this.#debounce);
    this.#debounce = setTimeout(() => {
      this.#debounce = null;
      this.#options.onChange('event');
    }, this.#options.debounceMs);
    this.#debounce.unref();
  }
}

/**
 * The entry names whose events concern `file`: its own name, and the kubelet's atomic
 * update of a projected volume, which writes a new timestamped folder, points `..data_tmp`
 * at it and renames that over `..data` (the file itself is a symlink through `..data`).
 */
function relevantNames(file: string): ReadonlySet<string> {
  return new Set([basename(file), '..data', '..data_tmp']);
}

function directoryId(file: string): string {
  try {
    const st = statSync(dirname(file), { bigint: true });
    return `${st.dev}:${st.ino}:${st.birthtimeNs}`;
  } catch {
    return 'missing';
  }
}
