import { type FSWatcher, statSync, watch } from 'node:fs';
import { dirname } from 'node:path';

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
 * watch on the file itself would follow. Every event in the directory counts (the reload
 * path no-ops when the bytes are the same), debounced so a burst costs one reload.
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

  get watching(): boolean {
    return this.#watcher !== null;
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
      watcher.on('change', () => {
        // An event about the directory itself going away: drop the dead watch now, so the
        // next re-check attaches to the new directory.
        if (directoryId(this.#options.file) !== this.#directoryId) this.#detach();
        this.#schedule();
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


function directoryId(file: string): string {
  try {
    const st = statSync(dirname(file), { bigint: true });
    return `${st.dev}:${st.ino}:${st.birthtimeNs}`;
  } catch {
    return 'missing';
  }
}
