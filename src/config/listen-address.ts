/** `127.0.0.1:8080` or `[::1]:8080` -> host and port (the schema has checked the form). */
export function splitHostPort(hostPort: string): { host: string; port: number } {
  const i = hostPort.lastIndexOf(':');
  return { host: hostPort.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(hostPort.slice(i + 1)) };
}

/** Whether a listen host accepts only local connections (IPv4-mapped loopback included). */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^(::ffff:)?127\.\d+\.\d+\.\d+$/i.test(host);
}

/** A non-loopback admin listener must require a token, at start-up and after every reload. */
export function adminTokenRequired(adminListen: string | undefined): boolean {
  return adminListen !== undefined && !isLoopback(splitHostPort(adminListen).host);
}
