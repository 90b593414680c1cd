// A page whose websocket the server refused (HTTP 429 at the handshake: too many tabs or new pages from one address,
// a class's room full) or never opened: say so, and try again with a growing wait, rather than stay blank.
// Loaded first in the page's <head> by the lab's server (grpo_lab.admission), before Bokeh opens the websocket.
(() => {
  const KEY = "grpo-lab-socket-retries";
  const Native = window.WebSocket;
  if (!Native || Native.__labWatched) return;
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

  class Watched extends Native {
    constructor(url, protocols) {
      super(url, protocols);
      this.addEventListener("open", () => { opened = true; sessionStorage.removeItem(KEY); });
      this.addEventListener("close", () => { if (!opened) refused(); });
    }
  }
  Watched.__labWatched = true;
  window.WebSocket = Watched;
})();
