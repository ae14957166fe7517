// The runs page's filter and sort, over every run of the site (runs/search.js), not only the rows
// in the page. The state lives in the address (#q=...&sort=...&dir=...; also hardware=, model=,
// backend= for an exact match), so a filtered list is a link that survives rebuilds.
(function () {
  var data = window.PDX_RUNS, table = document.querySelector("table.runs");
  var input = document.getElementById("run-search"), count = document.getElementById("run-count");
  if (!data || !table || !input) return;
  var SHOWN = table.tBodies[0].rows.length || 200;
  var C = {};
  data.columns.forEach(function (name, i) { C[name] = i; });
  // The table's columns, left to right, as the search rows hold them.
  var ORDER = ["id", "created_at", "status", "hardware", "model", "backend", "threads", "tests", "tags", "prefill", "decode"];
  var NUMERIC = { threads: true, tests: true, prefill: true, decode: true };
  var state = { q: "", sort: "", dir: "", hardware: "", model: "", backend: "" };

  function hardware(row) { return data.hardware[row[C.hardware]]; }
  function model(row) { return data.models[row[C.model]]; }
  var haystack = data.rows.map(function (row) {
    return [row[C.id], row[C.status], hardware(row)[0], model(row)[0], row[C.backend]].concat(row[C.tags])
      .join(" ").toLowerCase();
  });

  function value(row, name) {
    if (name === "hardware") return hardware(row)[0].toLowerCase();
    if (name === "model") return model(row)[0].toLowerCase();
    if (name === "tags") return row[C.tags].join(" ").toLowerCase();
    var v = row[C[name]];
    if (NUMERIC[name]) return v === null || v === undefined ? -Infinity : v;
    return v === null || v === undefined ? "" : String(v).toLowerCase();
  }

  function rate(v) {
    if (v === null || v === undefined) return "\u2014";
    if (Math.abs(v) >= 100) return Math.round(v).toLocaleString("en-US");
    return Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
  }

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    if (text instanceof Node) td.appendChild(text); else td.textContent = text;
    tr.appendChild(td);
    return td;
  }

  function link(href, text) {
    var a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    return a;
  }

  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    Object.keys(state).forEach(function (k) { state[k] = params.get(k) || ""; });
  }

  function writeHash() {
    var params = new URLSearchParams();
    Object.keys(state).forEach(function (k) { if (state[k]) params.set(k, state[k]); });
    var hash = params.toString();
    history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
  }

  function matching() {
    var words = state.q.toLowerCase().split(/\s+/).filter(Boolean), found = [];
    for (var i = 0; i < data.rows.length; i++) {
      var row = data.rows[i], text = haystack[i], ok = true;
      for (var w = 0; ok && w < words.length; w++) ok = text.indexOf(words[w]) >= 0;
      if (ok && state.hardware) ok = hardware(row)[0] === state.hardware;
      if (ok && state.model) ok = model(row)[0] === state.model;
      if (ok && state.backend) ok = row[C.backend] === state.backend;
      if (ok) found.push(row);
    }
    if (state.sort && C[state.sort] !== undefined) {
      var sign = state.dir === "ascending" ? 1 : -1, name = state.sort;
      found.sort(function (a, b) {
        var x = value(a, name), y = value(b, name);
        return x < y ? -sign : x > y ? sign : 0;
      });
    }
    return found;
  }

  function render() {
    var found = matching(), body = document.createElement("tbody");
    found.slice(0, SHOWN).forEach(function (row) {
      var tr = document.createElement("tr"), hw = hardware(row), m = model(row);
      cell(tr, link(row[C.id] + ".html", row[C.id].slice(0, 12)), "mono");
      cell(tr, (row[C.created_at] || "").slice(0, 16).replace("T", " "), "nowrap");
      cell(tr, row[C.status]);
      cell(tr, hw[1] ? link("../" + hw[1], hw[0]) : hw[0]);  // a run that names no machine has no page
      cell(tr, link("../" + m[1], m[0]));
      cell(tr, row[C.backend]);
      cell(tr, row[C.threads] || "\u2014", "num");
      cell(tr, row[C.tests], "num");
      var tags = cell(tr, "");
      row[C.tags].forEach(function (t) {
        var span = document.createElement("span");
        span.className = "tag";
        span.textContent = t;
        tags.appendChild(span);
        tags.appendChild(document.createTextNode(" "));
      });
      cell(tr, rate(row[C.prefill]), "num");
      cell(tr, rate(row[C.decode]), "num");
      body.appendChild(tr);
    });
    table.replaceChild(body, table.tBodies[0]);
    count.textContent = Math.min(found.length, SHOWN) + " of " + found.length + " matching runs shown (" +
      data.rows.length + " in all)";
    table.querySelectorAll("th[data-sort]").forEach(function (th, i) {
      if (ORDER[i] === state.sort) th.setAttribute("aria-sort", state.dir || "descending");
      else th.removeAttribute("aria-sort");
    });
  }

  input.form.addEventListener("submit", function (e) { e.preventDefault(); }); // Enter filters, never reloads
  var timer = null;
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { state.q = input.value; writeHash(); render(); }, 80);
  });
  table.querySelector("thead").addEventListener("click", function (e) {
    var th = e.target.closest("th[data-sort]");
    if (!th) return;
    e.stopPropagation(); // the page-wide sort (sort.js) would sort only the rows in the page
    var name = ORDER[th.cellIndex];
    state.dir = state.sort === name && state.dir !== "ascending" ? "ascending" :
      (state.sort === name ? "descending" : (NUMERIC[name] ? "descending" : "ascending"));
    state.sort = name;
    writeHash();
    render();
  });
  window.addEventListener("hashchange", function () { readHash(); input.value = state.q; render(); });
  readHash();
  input.value = state.q;
  if (location.hash.length > 1) render();
})();
