import type { TargetCheck } from './scenario.js';

export type Cell = string | number | null;

/** A plain-text table: numbers right-aligned, everything else left-aligned. */
export function renderTable(title: string, header: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const text = rows.map((r) => r.map(formatCell));
  const widths = header.map((h, i) => Math.max(h.length, ...text.map((r) => (r[i] ?? '').length)));
  const numeric = header.map((_, i) => rows.every((r) => typeof r[i] === 'number' || r[i] === null));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (numeric[i] === true && i > 0 ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [title, line(header), rule, ...text.map(line)].join('\n');
}

export function targetTable(title: string, targets: readonly TargetCheck[]): string {
  return renderTable(
    title,
    ['target', 'value', 'goal', 'verdict'],
    targets.map((t) => [
      t.name,
      `${formatNumber(t.value)} ${t.unit}`.trim(),
      `${t.op} ${formatNumber(t.target)} ${t.unit}`.trim(),
      t.verdict,
    ]),
  );
}

function formatCell(c: Cell): string {
  if (c === null) return '-';
  return typeof c === 'number' ? formatNumber(c) : c;
}

export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Number.isInteger(n)) return String(n);
  const abs = Math.abs(n);
  return n.toFixed(abs >= 100 ? 1 : abs >= 1 ? 2 : 3);
}
