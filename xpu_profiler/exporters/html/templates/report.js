/* Draws the report's figures and makes the kernel table sortable and filterable.
   All data comes from the one JSON blob in #report-data; text from traces is only
   ever assigned through textContent, never parsed as HTML. */
(function () {
  "use strict";
  window.XPU_SCRIPT_MS = performance.now();  // plotly.js is parsed and run by now
  var REPORT = JSON.parse(document.getElementById("report-data").textContent);
  window.XPU_REPORT = REPORT;

  function drawFigures() {
    var figures = REPORT.figures || {};
    var pending = [];
    Object.keys(figures).forEach(function (id) {
      var div = document.getElementById("fig-" + id);
      if (!div) { return; }
      if (!window.Plotly) {
        div.className = "plot plot-missing";
        div.textContent = "Charts need plotly.js, which could not be loaded (this report links it from cdn.plot.ly).";
        return;
      }
      var fig = figures[id];
      pending.push(window.Plotly.newPlot(div, fig.data, fig.layout, {
        displaylogo: false, responsive: true,
        modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"]
      }));
    });
    Promise.all(pending).then(function () {
      window.XPU_DRAWN_MS = performance.now();  // since navigation start
      document.body.setAttribute("data-figures-drawn", String(pending.length));
    });
  }

  function kernelTable() {
    var table = document.getElementById("kernel-table");
    if (!table || !REPORT.kernels) { return; }
    var rows = REPORT.kernels.rows;
    var tbody = table.tBodies[0];
    var trs = Array.prototype.slice.call(tbody.rows);
    var filter = document.getElementById("kernel-filter");
    var fused = document.getElementById("kernel-fused");
    var count = document.getElementById("kernel-count");
    var state = { key: "time_ns", dir: -1 };

    function sort(key, type) {
      state.dir = (state.key === key) ? -state.dir : (type === "num" ? -1 : 1);
      state.key = key;
      trs.sort(function (a, b) {
        var x = rows[+a.getAttribute("data-i")][key], y = rows[+b.getAttribute("data-i")][key];
        if (x === y) { return 0; }
        if (x === null) { return 1; }
        if (y === null) { return -1; }
        if (type === "num") { return state.dir * (x - y); }
        return state.dir * String(x).localeCompare(String(y));
      });
      var frag = document.createDocumentFragment();
      trs.forEach(function (tr) { frag.appendChild(tr); });
      tbody.appendChild(frag);
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
        th.classList.remove("sorted", "asc", "desc");
        if (th.getAttribute("data-key") === key) {
          th.classList.add("sorted", state.dir > 0 ? "asc" : "desc");
        }
      });
    }

    function applyFilter() {
      var q = filter.value.trim().toLowerCase();
      var op = fused.value;
      var shown = 0;
      trs.forEach(function (tr) {
        var r = rows[+tr.getAttribute("data-i")];
        var ok = (!q || r.name.toLowerCase().indexOf(q) >= 0) && (!op || r.fused_op === op);
        tr.hidden = !ok;
        if (ok) { shown += 1; }
      });
      count.textContent = shown === trs.length ? "" : shown + " of " + trs.length + " shown";
    }

    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      var key = th.getAttribute("data-key");
      if (key) {
        th.addEventListener("click", function () { sort(key, th.getAttribute("data-type")); });
      }
    });
    filter.addEventListener("input", applyFilter);
    fused.addEventListener("change", applyFilter);
  }

  kernelTable();
  drawFigures();
})();
