// Sortable tables: click a header with data-sort; cells sort by data-v (numbers) or their text.
(function () {
  function key(cell, numeric) {
    if (!cell) return numeric ? -Infinity : "";
    var v = cell.getAttribute("data-v");
    if (numeric) { var n = parseFloat(v === null ? cell.textContent : v); return isNaN(n) ? -Infinity : n; }
    return (v === null ? cell.textContent : v).trim().toLowerCase();
  }
  function sort(th) {
    var table = th.closest("table"), body = table.tBodies[0], index = th.cellIndex;
    var numeric = th.getAttribute("data-sort") === "num";
    var dir = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
    if (!numeric && !th.hasAttribute("aria-sort")) dir = "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[index], numeric), y = key(b.cells[index], numeric);
      var c = x < y ? -1 : x > y ? 1 : 0;
      return dir === "ascending" ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.addEventListener("click", function (e) {
    var th = e.target.closest && e.target.closest("th[data-sort]");
    if (th) sort(th);
  });
})();
