// assessd embed dev tools: Shift + Control + Tilde opens a panel whose
// language view, "Translation keys", lists the key of every visible label,
// so a host knows what to override in theme.strings.
(function () {
  "use strict";
  var panel = null;

  function visibleKeys() {
    var seen = {};
    var rows = [];
    document.querySelectorAll("[data-i18n-key]").forEach(function (el) {
      if (el.closest("#assessd-devtools") || el.offsetParent === null) return;
      var key = el.getAttribute("data-i18n-key");
      if (seen[key]) return;
      seen[key] = true;
      rows.push([key, el.textContent.trim()]);
    });
    return rows;
  }

  function showTranslationKeys(view) {
    view.innerHTML = "";
    var title = document.createElement("h2");
    title.textContent = view.getAttribute("data-title");
    view.appendChild(title);
    var table = document.createElement("table");
    visibleKeys().forEach(function (row) {
      var tr = document.createElement("tr");
      row.forEach(function (cell, i) {
        var td = document.createElement("td");
        if (i === 0) {
          var code = document.createElement("code");
          code.textContent = cell;
          td.appendChild(code);
        } else {
          td.textContent = cell;
        }
        tr.appendChild(td);
      });
      table.appendChild(tr);
    });
    view.appendChild(table);
    view.hidden = false;
  }

  function toggle() {
    panel = panel || document.getElementById("assessd-devtools");
    if (!panel) return;
    panel.hidden = !panel.hidden;
    if (!panel.hidden) panel.querySelector("button").focus();
  }

  document.addEventListener("keydown", function (e) {
    if (e.shiftKey && e.ctrlKey && (e.key === "~" || e.code === "Backquote")) {
      e.preventDefault();
      toggle();
    }
  });

  document.addEventListener("click", function (e) {
    var button = e.target.closest("#assessd-devtools [data-view=translation-keys]");
    if (button) showTranslationKeys(document.getElementById("assessd-devtools-view"));
  });
})();
