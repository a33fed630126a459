// console.table: Node's box-drawing layout (index column, one column per key, a Values
// column for primitive rows).
import { Map, Set, Object, Array, Math, String } from "./builtins.js";
export function formatTable(data: unknown, columnFilter: unknown, format: (value: unknown) => string): string {
  const rows: [string, unknown][] = [];
  let indexHeader = "(index)";
  if (data instanceof Map) {
    indexHeader = "(iteration index)";
    let i = 0;
    for (const [key, value] of data) rows.push([String(i++), { Key: key, Values: value }]);
  } else if (data instanceof Set) {
    indexHeader = "(iteration index)";
    let i = 0;
    for (const value of data) rows.push([String(i++), value]);
  } else {
    for (const key of Object.keys(data as object)) rows.push([key, (data as Record<string, unknown>)[key]]);
  }
  const columns: string[] = [];
  let hasValues = false;
  for (const [, row] of rows) {
    if (typeof row === "object" && row !== null) {
      for (const key of Object.keys(row)) if (columns.indexOf(key) === -1) columns.push(key);
    } else {
      hasValues = true;
    }
  }
  const shownColumns = Array.isArray(columnFilter) ? columnFilter.map(String) : columns;
  const header = [indexHeader, ...shownColumns, ...(hasValues ? ["Values"] : [])];
  const body = rows.map(([index, row]) => {
    const cells = [index];
    for (const column of shownColumns) {
      const has = typeof row === "object" && row !== null && Object.prototype.hasOwnProperty.call(row, column);
      cells.push(has ? format((row as Record<string, unknown>)[column]) : "");
    }
    if (hasValues) cells.push(typeof row === "object" && row !== null ? "" : format(row));
    return cells;
  });
  // A loop, not Math.max(...column): spreading 65,535+ rows overflows the argument list.
  const widths = header.map((title, i) => {
    let width = title.length;
    for (const cells of body) width = Math.max(width, cells[i]!.length);
    return width + 2;
  });
  const line = (left: string, mid: string, right: string) => left + widths.map((w) => "─".repeat(w)).join(mid) + right;
  const row = (cells: string[]) => `│${cells.map((cell, i) => ` ${cell.padEnd(widths[i]! - 1, " ")}`).join("│")}│`;
  return [line("┌", "┬", "┐"), row(header), line("├", "┼", "┤"), ...body.map(row), line("└", "┴", "┘")].join("\n");
}
