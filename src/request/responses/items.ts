import type { Item } from '../../responses/index.js';

// The conversation the gateway holds, as a provider that speaks the Responses API itself
// is sent it in `input`. Items the gateway made (a translated turn's, a gateway-run tool's)
// mean nothing to that provider under their ids, so only what it can take is sent:
// - an item's id is left out, except a reasoning item's that carries the provider's own
//   encrypted content (its id is the provider's);
// - reasoning goes back only to the provider that wrote it: with its encrypted content, or
//   by reference when that provider keeps it (`keeps`); any other (another provider's
//   summary) is left out, and the answer says so;
// - a tool the gateway ran (`mcp_call`) becomes the function call and its output that it was
//   (under the function name the model was offered it by, when the caller says which);
// - tool listings and approvals, the gateway's bookkeeping, are left out.

export function upstreamItems(items: readonly Item[], functionOf: (tool: string) => string = (tool) => tool): Record<string, unknown>[] {
  return upstreamInput(items, functionOf).items;
}

/** The items to send, and whether reasoning was left out (the answer lists `input.reasoning` in `x-switchyard-dropped`). */
export function upstreamInput(
  items: readonly Item[],
  functionOf: (tool: string) => string = (tool) => tool,
  keeps: (item: Item) => boolean = () => false,
): { readonly items: Record<string, unknown>[]; readonly reasoningLeftOut: boolean } {
  const out: Record<string, unknown>[] = [];
  let reasoningLeftOut = false;
  for (const item of items) {
    switch (item.type) {
      case 'reasoning':
        if (typeof item.encrypted_content === 'string' && item.encrypted_content !== '') out.push(item);
        else if (keeps(item)) out.push({ type: 'item_reference', id: item.id });
        else reasoningLeftOut = true;
        break;
      case 'mcp_call': {
        const callId = item.id;
        out.push({ type: 'function_call', call_id: callId, name: functionOf(String(item.name)), arguments: item.arguments ?? '{}' });
        const output = typeof item.output === 'string' ? item.output : `error: ${errorText(item.error)}`;
        out.push({ type: 'function_call_output', call_id: callId, output });
        break;
      }
      case 'mcp_list_tools':
      case 'mcp_approval_request':
      case 'mcp_approval_response':
        break;
      default: {
        const { id: _id, ...rest } = item;
        out.push(rest);
      }
    }
  }
  return { items: out, reasoningLeftOut };
}

/** What an mcp_call's error says, for the model that asked for the call. */
function errorText(error: unknown): string {
  if (typeof error === 'string') return error;
  if (typeof error !== 'object' || error === null) return 'the call failed';
  const e = error as Record<string, unknown>;
  if (typeof e.message === 'string') return e.message;
  return JSON.stringify(e.content ?? e);
}
