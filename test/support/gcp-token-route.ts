import type { JWT } from 'google-auth-library';

/**
 * google-auth-library posts a service account's JWT to Google's fixed token URL (a key file's
 * `token_uri` is not read): this sends that one URL to a mock at `origin` instead, as a proxy
 * would. Returns the same client.
 */
export function tokensFromMock(client: JWT, origin: string): JWT {
  client.transporter.interceptors.request.add({
    resolved: async (opts) => {
      const url = String(opts.url);
      if (url.startsWith('https://oauth2.googleapis.com/')) opts.url = new URL(url.replace('https://oauth2.googleapis.com', origin));
      return opts;
    },
  });
  return client;
}
