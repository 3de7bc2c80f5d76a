// assessd embedded flows: tells the host page what happens (postMessage to
// the session's allowed origins only) and guards unsaved work. Page updates
// themselves are htmx attributes in the templates.
(function () {
  "use strict";
  var origins = (document.body.getAttribute("data-origins") || "").split(" ").filter(Boolean);

  // post sends {type: "assessd.<event>", ...detail} (API.md) to the host;
  // never to "*", so another site framing the page learns nothing.
  function post(type, detail) {
    if (window.parent === window) return;
    var msg = Object.assign({ type: "assessd." + type }, detail || {});
    origins.forEach(function (origin) {
      window.parent.postMessage(msg, origin);
    });
  }

  // announce posts, once each, the events the server-rendered page declares
  // with data-assessd-event; the element's other data-assessd-* attributes
  // are the event's fields (numbers as numbers).
  function announce(root) {
    root.querySelectorAll("[data-assessd-event]").forEach(function (el) {
      if (el.hasAttribute("data-announced")) return;
      el.setAttribute("data-announced", "");
      var detail = {};
      Array.prototype.forEach.call(el.attributes, function (attr) {
        if (attr.name.indexOf("data-assessd-") !== 0 || attr.name === "data-assessd-event") return;
        var key = attr.name.slice(13).replace(/-([a-z])/g, function (_, c) { return c.toUpperCase(); });
        detail[key] = /^-?\d+(\.\d+)?$/.test(attr.value) ? Number(attr.value) : attr.value;
      });
      post(el.getAttribute("data-assessd-event"), detail);
    });
  }

  var lastHeight = 0;
  function resize() {
    var height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (height !== lastHeight) {
      lastHeight = height;
      post("resize", { height: height });
    }
  }

  post("ready", { flow: document.body.getAttribute("data-flow") || "" });
  announce(document);
  resize();
  if (window.ResizeObserver) new ResizeObserver(resize).observe(document.documentElement);

  document.body.addEventListener("htmx:afterSettle", function (e) { announce(e.target); });
  // A long poll (data-long-poll) that failed asks again: its element
  // listens for "retry" with a delay.
  function retry(e) {
    var el = e.detail.elt;
    if (el && el.hasAttribute("data-long-poll")) htmx.trigger(el, "retry");
  }
  document.body.addEventListener("htmx:responseError", function (e) {
    post("error", { status: e.detail.xhr.status, message: "request failed" });
    retry(e);
  });
  document.body.addEventListener("htmx:sendError", function (e) {
    post("error", { message: "network error" });
    retry(e);
  });

  // Forms marked data-guard warn before their unsaved changes are lost.
  var dirty = new Set();
  document.addEventListener("input", function (e) {
    var form = e.target.form && e.target.form.closest("form[data-guard]");
    if (form) dirty.add(form);
  });
  document.addEventListener("submit", function (e) {
    var form = e.target;
    var question = form.getAttribute("data-confirm");
    // Buttons with their own formaction (Next, Previous) only save.
    var saving = e.submitter && e.submitter.hasAttribute("formaction");
    if (question && !saving && !window.confirm(question)) {
      e.preventDefault();
      return;
    }
    dirty.delete(form);
  });
  window.addEventListener("beforeunload", function (e) {
    if (dirty.size > 0) {
      e.preventDefault();
      e.returnValue = "";
    }
  });

  // Question lists marked data-reorder: drag a handle, or focus it and
  // press ArrowUp/ArrowDown. The page moves the item at once, posts the new
  // order (htmx.ajax) and announces the position to screen readers.
  var list = document.querySelector("[data-reorder]");
  if (list) {
    var dragged = null;
    var save = function (item) {
      var order = Array.prototype.map.call(list.children, function (li) { return li.getAttribute("data-id"); });
      Array.prototype.forEach.call(list.children, function (li, i) {
        li.querySelector(".position").textContent = (i + 1) + ".";
      });
      htmx.ajax("POST", list.getAttribute("data-reorder"), { values: { order: order }, swap: "none" });
      var status = document.getElementById("order-status");
      if (status) status.textContent = list.getAttribute("data-moved") + " " + (order.indexOf(item.getAttribute("data-id")) + 1);
    };
    list.addEventListener("dragstart", function (e) {
      dragged = e.target.closest("li");
      e.dataTransfer.effectAllowed = "move";
      e.dataTransfer.setData("text/plain", dragged.getAttribute("data-id"));
    });
    list.addEventListener("dragover", function (e) {
      var over = e.target.closest("li");
      if (!dragged || !over || over === dragged) return;
      e.preventDefault();
      var after = e.clientY > over.getBoundingClientRect().top + over.offsetHeight / 2;
      list.insertBefore(dragged, after ? over.nextSibling : over);
    });
    list.addEventListener("drop", function (e) { e.preventDefault(); });
    list.addEventListener("dragend", function () {
      if (dragged) save(dragged);
      dragged = null;
    });
    list.addEventListener("keydown", function (e) {
      if (!e.target.classList.contains("handle") || (e.key !== "ArrowUp" && e.key !== "ArrowDown")) return;
      e.preventDefault();
      var item = e.target.closest("li");
      var sibling = e.key === "ArrowUp" ? item.previousElementSibling : item.nextElementSibling;
      if (!sibling) return;
      list.insertBefore(item, e.key === "ArrowUp" ? sibling : sibling.nextSibling);
      e.target.focus();
      save(item);
    });
  }

  // A timed exam counts down to its deadline (kept by the server across
  // reloads) and submits the answers when time is up, unless the
  // assignment discards what is not submitted in time (data-keep). The server says how
  // many seconds were left when it made the page; the count runs on the
  // page's monotonic clock from there, never on its wall clock, which may
  // be wrong.
  var timer = document.getElementById("timer");
  if (timer) {
    var end = performance.now() + Number(timer.getAttribute("data-left")) * 1000;
    var tick = function () {
      var left = Math.max(0, Math.round((end - performance.now()) / 1000));
      var h = Math.floor(left / 3600), m = Math.floor(left / 60) % 60, sec = left % 60;
      var pad = function (n) { return (n < 10 ? "0" : "") + n; };
      timer.textContent = (h > 0 ? h + ":" + pad(m) : m) + ":" + pad(sec);
      if (left > 0) return;
      clearInterval(interval);
      timer.textContent = timer.getAttribute("data-over");
      var exam = document.getElementById("exam");
      if (exam && !timer.hasAttribute("data-keep")) exam.submit();
    };
    var interval = setInterval(tick, 1000);
    tick();
  }
})();
