// Sortable tables: click (or press Enter/Space on) a column header of a `table.sortable` to sort its body
// rows by that column; click again to reverse. A header's data-sort says how to compare its cells:
// "number" (numerically, so 10 sorts after 9), "turn" (turn ids like 9_12 < 10_2, part by part), or text.
// Each cell's data-sort-value is compared when present, else its text. Rows are moved, never rebuilt,
// so no collection text passes through HTML parsing.

function cellValue(row, index) {
  const cell = row.cells[index];
  if (!cell) return "";
  return cell.dataset.sortValue ?? cell.textContent.trim();
}

function turnKey(value) {
  return value.split(/[_-]/).map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

function compareTurns(a, b) {
  const ka = turnKey(a);
  const kb = turnKey(b);
  for (let i = 0; i < Math.min(ka.length, kb.length); i += 1) {
    if (ka[i] === kb[i]) continue;
    if (typeof ka[i] === "number" && typeof kb[i] === "number") return ka[i] - kb[i];
    return String(ka[i]).localeCompare(String(kb[i]));
  }
  return ka.length - kb.length;
}

export function comparator(kind) {
  if (kind === "number") {
    return (a, b) => {
      const x = Number.parseFloat(a);
      const y = Number.parseFloat(b);
      // Cells that are not numbers sort after every number.
      if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) - Number.isNaN(y);
      return x - y;
    };
  }
  if (kind === "turn") return compareTurns;
  return (a, b) => a.localeCompare(b);
}

export function sortTable(table, index, descending) {
  const header = table.tHead.rows[0].cells[index];
  const compare = comparator(header.dataset.sort || "text");
  const body = table.tBodies[0];
  const rows = Array.from(body.rows).map((row, position) => ({ row, position }));
  rows.sort((a, b) => {
    const order = compare(cellValue(a.row, index), cellValue(b.row, index));
    // Ties keep their current order, so sorting by one column then another is stable.
    return (descending ? -order : order) || a.position - b.position;
  });
  for (const { row } of rows) body.appendChild(row);
  for (const cell of table.tHead.rows[0].cells) cell.removeAttribute("aria-sort");
  header.setAttribute("aria-sort", descending ? "descending" : "ascending");
}

export function makeSortable(table) {
  const headers = Array.from(table.tHead.rows[0].cells);
  headers.forEach((header, index) => {
    header.tabIndex = 0;
    header.classList.add("sort-header");
    const activate = () => {
      // Numbers start highest first (best run on top), text starts A to Z.
      const current = header.getAttribute("aria-sort");
      const descending = current ? current === "ascending" : header.dataset.sort === "number";
      sortTable(table, index, descending);
    };
    header.addEventListener("click", activate);
    header.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        activate();
      }
    });
  });
}

for (const table of document.querySelectorAll("table.sortable")) makeSortable(table);
