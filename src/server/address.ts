// The listen-address rules live with the config schema, which enforces the admin token;
// server/ uses the same functions to bind its listeners.
export { adminTokenRequired, isLoopback, splitHostPort } from '../config/index.js';
