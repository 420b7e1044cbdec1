// Sort a table by the column whose header button is pressed (click, Enter or Space; again: the other way). A
// cell's data-v holds the number behind its text; cells without one sort by their text. Rows with an empty
// cell go last. A figure opens full-size in a dialog (Escape or its button closes it).
(function () {
  function key(row, i) {
    var c = row.cells[i];
    if (!c) { return null; }
    if (c.dataset.v !== undefined) { return Number(c.dataset.v); }
    var t = c.textContent.trim();
    return t === "" || t === "\u2013" ? null : t.toLowerCase();
  }
  function compare(a, b) {
    if (a === null || b === null) { return a === b ? 0 : (a === null ? 1 : -1); }
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    if (typeof a === "number") { return -1; }
    if (typeof b === "number") { return 1; }
    return a < b ? -1 : (a > b ? 1 : 0);
  }
  function sortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, i) {
      var button = th.querySelector("button.sort") || th;
      button.addEventListener("click", function () {
        var body = table.tBodies[0];
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows).map(function (r, k) { return [key(r, i), k, r]; });
        rows.sort(function (x, y) {
          var d = compare(x[0], y[0]);
          if (x[0] !== null && y[0] !== null && !asc) { d = -d; }
          return d || x[1] - y[1];
        });
        rows.forEach(function (x) { body.appendChild(x[2]); });
      });
    });
  }
  document.querySelectorAll("table.sortable").forEach(sortable);
  // a folded table of thousands of rows waits in a <template>: it joins the page, sortable, when first opened
  // (listeners added after this one, such as the item links, find it there)
  document.querySelectorAll("details.lazy-table").forEach(function (d) {
    d.addEventListener("toggle", function () {
      var tpl = d.querySelector("template");
      if (!d.open || !tpl) { return; }
      var content = tpl.content.cloneNode(true);
      var tables = content.querySelectorAll("table.sortable");
      tpl.replaceWith(content);
      Array.prototype.forEach.call(tables, sortable);
    });
  });
  var dialog = null;
  function open(img, opener) {
    if (!dialog) {
      dialog = document.createElement("dialog");
      dialog.className = "zoomed";
      dialog.setAttribute("aria-label", "Figure at full size");
      var close = document.createElement("button");
      close.type = "button";
      close.className = "close";
      close.textContent = "Close (Esc)";
      close.addEventListener("click", function () { dialog.close(); });
      dialog.appendChild(close);
      dialog.appendChild(document.createElement("img"));
      dialog.addEventListener("close", function () { if (dialog.opener) { dialog.opener.focus(); } });
      document.body.appendChild(dialog);
    }
    var big = dialog.querySelector("img");
    big.src = img.src;
    big.alt = img.alt;
    dialog.opener = opener;
    dialog.showModal();
    dialog.querySelector("button.close").focus();
  }
  document.querySelectorAll("button.zoom").forEach(function (b) {
    b.addEventListener("click", function () { open(b.querySelector("img"), b); });
  });
})();
