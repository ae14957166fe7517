// "What to buy": a workload's estimate on every machine, from the page's own data (no network).
// estimate() is the whole model; the rest draws the table. Node can require() this file (tests do).
(function () {
  "use strict";

  // Per-sequence decode rate at `batch`, linear between measured batches; beyond the largest the
  // aggregate rate is held at the largest measured (the conservative reading of an unmeasured knee).
  function perSequenceRate(batches, batch) {
    var points = batches.slice().sort(function (a, b) { return a.batch - b.batch; });
    var last = points[points.length - 1];
    if (batch >= last.batch) {
      return {rate: last.per_sequence_rate * last.batch / batch, beyond: batch > last.batch};
    }
    for (var i = 1; i < points.length; i++) {
      var lo = points[i - 1], hi = points[i];
      if (batch <= hi.batch) {
        var f = (batch - lo.batch) / (hi.batch - lo.batch);
        return {rate: lo.per_sequence_rate + f * (hi.per_sequence_rate - lo.per_sequence_rate), beyond: false};
      }
    }
    return {rate: points[0].per_sequence_rate, beyond: false};
  }

  function estimate(machine, w) {
    var notes = [];
    var ttft = w.concurrency * w.prompt / machine.prefill.rate;
    var context = w.depth + w.prompt + w.output / 2;
    var fit = machine.depth_fit, perToken;
    if (fit) {
      perToken = fit.intercept + fit.slope * context;
      if (context > fit.x_max || context < fit.x_min) notes.push("context beyond the measured depths");
    } else {
      perToken = machine.decode.per_token_s;
      if (context > machine.decode.n_gen) notes.push("one depth measured: no KV cost");
    }
    var batch = perSequenceRate(machine.batches, w.concurrency);
    if (batch.beyond) notes.push("concurrency beyond the measured batches");
    var slowdown = machine.batches[0].per_sequence_rate / batch.rate;
    var step = perToken * slowdown;
    var decodeSeconds = w.output * step;
    var e = energy(machine, w);
    if (e && w.concurrency > 1) notes.push("energy from batch-1 tests");
    return {
      ttft: ttft, perRequest: 1 / step, aggregate: w.concurrency / step, total: ttft + decodeSeconds,
      decodeSeconds: decodeSeconds, dominant: ttft > decodeSeconds ? "prefill" : "decode", notes: notes,
      joules: e ? e.joules : null, cost: e ? e.cost : null, currency: e ? e.currency : null
    };
  }

  // A request's energy from the headline tests' joules per token (prefill's per prompt token,
  // decode's per output token), and its cost at the price the decode run was costed at; null where
  // a meter did not read both.
  function energy(machine, w) {
    var p = machine.prefill, d = machine.decode;
    if (p.j_per_token === undefined || d.j_per_token === undefined) return null;
    var joules = w.prompt * p.j_per_token + w.output * d.j_per_token;
    return {joules: joules, cost: joules / 3.6e6 * d.price_kwh, currency: d.currency};
  }

  if (typeof module !== "undefined" && module.exports) {
    module.exports = {estimate: estimate, perSequenceRate: perSequenceRate, energy: energy};
    return;
  }

  var models = JSON.parse(document.getElementById("buy-data").textContent).models;
  var form = document.getElementById("workload"), body = document.getElementById("estimates");

  function fixed(x, digits) { return isFinite(x) ? x.toFixed(digits) : "—"; }
  function sig(x) { return isFinite(x) ? Number(x.toPrecision(4)).toString() : "—"; }
  function cell(text, value, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (value !== undefined) td.setAttribute("data-v", value);
    if (cls) td.className = cls;
    return td;
  }
  function kvCost(fit) {
    if (!fit) return "not measured";
    // ± here is the fit's standard error, said so: the pages' other ± are 95% CIs
    var us = fit.slope * 1e6;
    var err = fit.slope_se === null ? "" : " ± " + sig(fit.slope_se * 1e6) + " µs standard error";
    return sig(us) + " µs" + err + " (intercept " + sig(fit.intercept * 1e3) + " ms)";
  }

  function workload() {
    var get = function (name, least) {
      var v = Math.floor(Number(form.elements[name].value));
      return isFinite(v) && v >= least ? v : least;
    };
    return {prompt: get("prompt", 1), output: get("output", 1), depth: get("depth", 0),
            concurrency: get("concurrency", 1)};
  }

  function draw() {
    var model = models[Number(form.elements.model.value)] || {machines: []}, w = workload();
    body.textContent = "";
    model.machines.forEach(function (m) {
      var e = estimate(m, w), tr = document.createElement("tr");
      var link = document.createElement("a");
      link.href = m.hardware_page;
      link.textContent = m.hardware;
      var first = cell("");
      first.appendChild(link);
      tr.appendChild(first);
      tr.appendChild(cell(m.backend));
      tr.appendChild(cell(fixed(e.ttft, 3), e.ttft, "num ttft"));
      tr.appendChild(cell(sig(e.perRequest), e.perRequest, "num per-request"));
      tr.appendChild(cell(sig(e.aggregate), e.aggregate, "num aggregate"));
      tr.appendChild(cell(fixed(e.total, 2), e.total, "num total"));
      tr.appendChild(cell(e.dominant, undefined, "dominant"));
      tr.appendChild(cell(e.joules === null ? "—" : sig(e.joules), e.joules === null ? "" : e.joules, "num joules"));
      tr.appendChild(cell(e.cost === null ? "—" : e.currency + " " + sig(e.cost * 1000), e.cost === null ? "" : e.cost, "num cost"));
      tr.appendChild(cell(kvCost(m.depth_fit)));
      tr.appendChild(cell(e.notes.join("; ")));
      var run = document.createElement("a"), from = cell("", undefined, "chosen");
      run.href = m.run_page;
      run.textContent = m.run.slice(0, 8);
      from.appendChild(run);
      var of = m.chosen ? m.chosen.of : 1;
      from.appendChild(document.createTextNode(" " + (m.chosen ? m.chosen.by : "best") + " of " + of + " run" + (of === 1 ? "" : "s")));
      tr.appendChild(from);
      body.appendChild(tr);
    });
  }

  form.addEventListener("input", draw);
  form.addEventListener("change", draw);
  form.addEventListener("submit", function (event) { event.preventDefault(); });  // Enter recomputes, never navigates
  draw();
})();
