// A page whose websocket the server refused (HTTP 429 at the handshake: too many tabs or new pages from one address,
// a class's room full) or never opened: say so, and try again with a growing wait, rather than stay blank.
// Loaded first in the page's <head> by the lab's server (grpo_lab.admission), before Bokeh opens the websocket.
//
// It observes the Bokeh document's socket only (one to this page's own host whose path ends in /ws): until Bokeh has
// made it, window.WebSocket is a Proxy of the browser's constructor that hands back the browser's own socket (so
// `instanceof`, the constants and every other socket are untouched, and none but that one is watched); once made, the
// browser's constructor is put back, so the page's globals are as the browser made them.
(() => {
  const KEY = "grpo-lab-socket-retries";
  const Native = window.WebSocket;
  if (!Native || window.__labSocketWatch) return;
  window.__labSocketWatch = "waiting";  // then "watched": the document's socket seen, the constructor put back
  let opened = false;
  const tries = () => Number(sessionStorage.getItem(KEY) || 0);

  function refused() {
    if (opened || document.getElementById("lab-socket-notice")) return;
    const n = tries();
    const wait = Math.min(60, 3 * 2 ** n) + Math.floor(Math.random() * 3);  // 3-5 s, 6-8 s, ... 60-62 s
    sessionStorage.setItem(KEY, String(n + 1));
    const box = document.createElement("div");
    box.id = "lab-socket-notice";
    box.className = "lab-refused";
    box.setAttribute("role", "alert");
    box.style.cssText = "position:fixed;top:0;left:0;right:0;z-index:10001;padding:0.75em 1em;background:#fff3cd;" +
      "color:#3d2c00;border-bottom:2px solid #b58100;font:16px/1.4 system-ui,sans-serif;text-align:center";
    const say = (left) => {
      box.textContent = "The lab's server could not open this page's connection: it is busy, or too many pages " +
        `are open from your network. Trying again in ${left} s (try ${n + 1}).`;
    };
    let left = wait;
    say(left);
    (document.body || document.documentElement).appendChild(box);
    const timer = setInterval(() => {
      left -= 1;
      if (left > 0) return say(left);
      clearInterval(timer);
      box.textContent = "Trying again\u2026";
      location.reload();
    }, 1000);
  }

  // whether `url` is the Bokeh document's socket: this page's host, a path ending in /ws
  function isDocument(url) {
    try {
      const u = new URL(String(url), location.href);
      return u.host === location.host && /\/ws$/.test(u.pathname);
    } catch (e) {
      return false;
    }
  }

  window.WebSocket = new Proxy(Native, {
    construct(target, args, newTarget) {
      const ws = Reflect.construct(target, args, newTarget);  // the browser's own socket (a subclass's, if so made)
      if (isDocument(args[0])) {
        window.WebSocket = Native;
        window.__labSocketWatch = "watched";
        ws.addEventListener("open", () => { opened = true; sessionStorage.removeItem(KEY); });
        ws.addEventListener("close", () => { if (!opened) refused(); });
      }
      return ws;
    },
  });
})();
