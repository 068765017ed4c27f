// The stable id a control plane assigns a candidate: FNV-1a 32-bit over the UTF-8 bytes of
// `kind/name/site/cluster`, as 8 lowercase hex digits. A parsed candidate without a
// stable_id falls back to the plain `kind/name/site/cluster` string instead.

const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const encoder = new TextEncoder();

export function stableIdFor(kind: string, name: string, site: string, cluster: string): string {
  let hash = FNV_OFFSET_BASIS;
  for (const byte of encoder.encode(`${kind}/${name}/${site}/${cluster}`)) {
    hash = Math.imul(hash ^ byte, FNV_PRIME);
  }
  return (hash >>> 0).toString(16).padStart(8, '0');
}
