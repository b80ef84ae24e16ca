// live.js: the console's change tails follow the node's multiplexed watch
// stream (internal/console/stream.go). Each element with data-watch (a
// watch's fields as POST /v1/watch/stream/{stream_id} takes them) becomes
// a watch of one stream, opened through the console (GET /console/stream)
// and added to it (POST /console/stream/{stream_id}); a change the stream
// reports fetches that tail's fragment at once — one fetch a tail at a
// time, at least minGapMs apart. While a tail is followed
// (data-live="stream") its 2 s poll is held back; a tail whose watch is
// refused or ends, and every tail while the stream is down, polls again
// (data-live="poll", the reason in its title). EventSource opens the
// stream again by itself after a drop; the watches are then added again,
// and each tail fetched once for what it missed. Without this script (or
// JavaScript) the tails poll, as every live part does.
(function () {
  "use strict";
  const tails = Array.from(document.querySelectorAll("[data-watch]"));
  if (tails.length === 0 || !window.EventSource || !window.htmx || !window.fetch) {
    return;
  }
  const minGapMs = 500;
  const byID = new Map(); // watch id → its tail
  tails.forEach(function (el, i) {
    byID.set(i + 1, { el: el, timer: null, last: 0 });
    el.dataset.live = "poll";
  });
  let fetching = null; // the tail whose own fetch htmx is starting

  function fetchTail(t) {
    t.last = Date.now();
    fetching = t.el;
    try {
      htmx.ajax("GET", t.el.getAttribute("hx-get"), { source: t.el, target: t.el, swap: "innerHTML" });
    } finally {
      fetching = null;
    }
  }
  // poke fetches a followed tail now, or once its gap has passed.
  function poke(t) {
    if (t.timer !== null || t.el.dataset.live !== "stream") {
      return;
    }
    const wait = Math.max(0, t.last + minGapMs - Date.now());
    t.timer = setTimeout(function () {
      t.timer = null;
      fetchTail(t);
    }, wait);
  }
  function poll(t, why) {
    t.el.dataset.live = "poll";
    t.el.title = why;
  }
  function pollAll(why) {
    byID.forEach(function (t) { poll(t, why); });
  }
  function messageOf(body, fallback) {
    return (body && body.error && body.error.message) || fallback;
  }
  // A followed tail's poll is held back: the stream says when to fetch
  // (htmx fires this synchronously in htmx.ajax, so fetching is its own).
  document.body.addEventListener("htmx:beforeRequest", function (e) {
    const el = e.detail.elt;
    if (el.dataset.live === "stream" && el !== fetching) {
      e.preventDefault();
    }
  });

  const es = new EventSource("/console/stream");
  es.addEventListener("stream", function (e) {
    const id = JSON.parse(e.data).stream_id;
    const watches = [];
    byID.forEach(function (t, wid) {
      watches.push(Object.assign(JSON.parse(t.el.dataset.watch), { watch_id: wid }));
    });
    fetch("/console/stream/" + encodeURIComponent(id), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ watches: watches }),
      credentials: "same-origin",
    }).then(function (resp) {
      return resp.json().then(function (body) {
        if (!resp.ok) {
          pollAll(messageOf(body, "the watch stream refused the tails: " + resp.status));
          return;
        }
        body.watches.forEach(function (w) {
          const t = byID.get(w.watch_id);
          if (!t) {
            return;
          }
          if (w.error) {
            poll(t, w.error.message);
            return;
          }
          t.el.dataset.live = "stream";
          t.el.title = "";
          fetchTail(t); // what changed between the page and the watch's start
        });
      });
    }).catch(function (err) {
      pollAll("the watch stream is not reachable: " + err);
    });
  });
  es.addEventListener("change", function (e) {
    const t = byID.get(JSON.parse(e.data).watch_id);
    if (t) {
      poke(t);
    }
  });
  // An "error" event with data ends one watch (watch_id) or the stream;
  // one without is EventSource's own: the connection dropped or was
  // refused (it tries again unless the node's answer was not a stream).
  es.addEventListener("error", function (e) {
    if (!e.data) {
      pollAll("the watch stream dropped: polling until it is back");
      return;
    }
    const d = JSON.parse(e.data);
    const why = messageOf(d, "the watch ended");
    if (!d.watch_id) {
      pollAll(why);
      return;
    }
    const t = byID.get(d.watch_id);
    if (t) {
      poll(t, why);
    }
  });
  window.addEventListener("pagehide", function () { es.close(); });
})();
