// watch/: the parent-directory file watch, shared by the gateway (config and overlay
// watches) and the publisher's grid loop (the inventory watch), so both react to a
// ConfigMap `..data` swap, an editor's save-by-rename and a recreated directory alike.
// It imports nothing from other src/ folders: a leaf that server/ and publisher/ both use
// without depending on each other. See docs/decisions/0002-overlay-consumption.md and
// docs/decisions/0010-overlay-publisher.md.

export { FileWatch, type FileWatchOptions } from './file-watch.js';
