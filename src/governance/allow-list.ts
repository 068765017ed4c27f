/** Which models a team may call. */
export type ModelAllowList = (model: string) => boolean;

export const ALLOW_ALL: ModelAllowList = () => true;

/**
 * Compiles `allowed_models` globs once per generation: `*` matches any run of characters,
 * `?` exactly one, everything else literally (so `gpt-4o.mini` does not match `gpt-4o-mini`).
 * Absent = every model.
 */
export function compileModelAllowList(patterns: readonly string[] | undefined): ModelAllowList {
  if (patterns === undefined) return ALLOW_ALL;
  const exact = new Set<string>();
  const globs: RegExp[] = [];
  for (const p of patterns) {
    if (!/[*?]/.test(p)) exact.add(p);
    else
      globs.push(
        new RegExp(
          `^${p
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replaceAll('*', '.*')
            .replaceAll('?', '.')}$`,
          's',
        ),
      );
  }
  return (model) => exact.has(model) || globs.some((g) => g.test(model));
}
