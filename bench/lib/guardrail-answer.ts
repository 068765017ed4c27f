// The answer the guardrails scenario has the mock stream, and the checks that it arrived as
// it should. The prompt is the mock's say: trigger: the model answers exactly the text after
// `say:`, one stream delta per piece (a U+241F ends each). The prompt carries an email and a
// card number, so a route that masks its input sends the mock placeholders, the mock says
// them back, and the gateway must restore them.

export const EMAIL = 'ada.lovelace@example.com';
export const CARD = '4111 1111 1111 1111';
/** Ends a stream delta in the mock's say: text. */
const SEP = '\u241f';

/** About 700 characters in about 35 pieces, the email and the card number each within one (as a model writes a value). */
export const PIECES: readonly string[] = (() => {
  const prose =
    'Thanks for the details, I have gone through your account and updated the billing profile as you asked. ' +
    'From now on every confirmation and receipt will be sent by email, and the monthly invoice will be charged ' +
    'on the first business day of each month. If a payment fails we will retry it twice over the following week ' +
    'and write to you before the service is paused. You can change either of these at any time from the settings ' +
    'page, and the change applies from the next invoice. Your current plan stays as it is, with the same limits and ' +
    'the same support hours, and nothing else about the account has changed. Let me know if anything here looks wrong.';
  const pieces: string[] = [];
  let piece = '';
  for (const word of prose.split(' ')) {
    piece += `${word} `;
    if (piece.length >= 18) {
      pieces.push(piece);
      piece = '';
    }
  }
  if (piece !== '') pieces.push(piece);
  pieces.splice(6, 0, `mail ${EMAIL} `);
  pieces.splice(16, 0, `card ${CARD} `);
  return pieces;
})();

/** What the client must receive, whatever the route: the originals, never a placeholder. */
export const ANSWER = PIECES.join('');

/** A streamed OpenAI chat request to `model` whose answer is ANSWER in PIECES. */
export function sayBody(model: string): string {
  return JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: `say: ${PIECES.join(SEP)}` }] });
}

/** How a stream reached the client. */
export interface StreamShape {
  /** Content deltas the client received. */
  readonly deltas: number;
  readonly firstDeltaChars: number;
}

/** One streamed answer, read whole: its shape, or what is wrong with it (not 200, or not ANSWER with the originals in it). */
export async function streamShape(url: string, body: string): Promise<StreamShape | string> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const raw = await res.text();
  if (res.status !== 200) return `HTTP ${res.status}: ${raw.slice(0, 200)}`;
  const deltas: string[] = [];
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const chunk = JSON.parse(line.slice(6)) as { choices?: Array<{ delta?: { content?: string | null } }> };
    const content = chunk.choices?.[0]?.delta?.content;
    if (typeof content === 'string' && content !== '') deltas.push(content);
  }
  const answer = deltas.join('');
  if (!answer.includes(EMAIL) || !answer.includes(CARD)) return 'the answer does not hold the email and card number the prompt gave';
  if (answer !== ANSWER) return `the answer is not the text the mock was told to say: ${JSON.stringify(answer.slice(0, 120))}…`;
  return { deltas: deltas.length, firstDeltaChars: deltas[0]?.length ?? 0 };
}

/** Null when the mock's last request carried placeholders in place of the email and the card number; else what it carried. */
export async function lastUpstreamMasked(mockOrigin: string): Promise<string | null> {
  const stats = (await (await fetch(`${mockOrigin}/__mock/stats`)).json()) as { recent: Array<{ body: string }> };
  const last = stats.recent.at(-1);
  if (last === undefined) return 'the mock recorded no request';
  if (last.body.includes(EMAIL) || last.body.includes(CARD)) return 'the mock received the email or the card number unmasked';
  if (!last.body.includes('<EMAIL_1>') || !last.body.includes('<CREDIT_CARD_1>')) return 'the mock did not receive the placeholders';
  return null;
}
