// live.js: the console's change tails follow the node's multiplexed watch
// stream (internal/console/stream.go). Each element with data-watch (a
// watch's fields as POST /v1/watch/stream/{stream_id} takes them) becomes
// a watch of one stream, opened through the console (GET /console/stream)
// and added to it (POST /console/stream/{stream_id}); a change the stream
// reports fetches that tail's fragment at once — one fetch a tail at a
// time, at least minGapMs apart; a tail with data-slots (a group's) only
// for a change in one of those hash slots. While a tail is followed
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
  const byEl = new Map(); // element → its tail
  tails.forEach(function (el, i) {
    const slots = el.dataset.slots ? new Set(el.dataset.slots.split(",").map(Number)) : null;
    const t = { el: el, slots: slots, timer: null, last: 0, due: false };
    byID.set(i + 1, t);
    byEl.set(el, t);
    el.dataset.live = "poll";
  });
  let streamID = null; // the stream open now (null: none)

  // fetchTail asks htmx for the tail's fragment. htmx may start the
  // request later (after the tail's request in flight): due lets it pass
  // the hold-back below then.
  function fetchTail(t) {
    t.last = Date.now();
    t.due = true;
    htmx.ajax("GET", t.el.getAttribute("hx-get"), { source: t.el, target: t.el, swap: "innerHTML" });
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
    streamID = null;
    byID.forEach(function (t) { poll(t, why); });
  }
  function messageOf(body, fallback) {
    return (body && body.error && body.error.message) || fallback;
  }
  // A followed tail's poll is held back: the stream says when to fetch.
  document.body.addEventListener("htmx:beforeRequest", function (e) {
    const t = byEl.get(e.detail.elt);
    if (!t) {
      return;
    }
    if (t.due) {
      t.due = false; // its own fetch
      return;
    }
    if (t.el.dataset.live === "stream") {
      e.preventDefault();
    }
  });

  const es = new EventSource("/console/stream");
  es.addEventListener("stream", function (e) {
    const id = JSON.parse(e.data).stream_id;
    streamID = id;
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
        if (id !== streamID || es.readyState !== EventSource.OPEN) {
          return; // an answer for a stream that is gone: its tails poll
        }
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
      if (id === streamID) {
        pollAll("the watch stream is not reachable: " + err);
      }
    });
  });
  es.addEventListener("change", function (e) {
    const d = JSON.parse(e.data);
    const t = byID.get(d.watch_id);
    if (t && (!t.slots || t.slots.has(d.hash_slot))) {
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
