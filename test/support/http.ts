/** A chat completion request body. */
export function chatBody(model: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model, messages: [{ role: 'user', content: 'hello there' }], ...extra });
}

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  json<T = Record<string, any>>(): T;
}

/** POSTs a chat completion to the gateway and reads the whole reply. */
export async function postChat(baseUrl: string, body: string | object, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: <T>() => JSON.parse(text) as T };
}
