/* grpo-lab EmbedHeight (lab/embed.py): the served lab, embedded with ?embed=true, tells its parent frame
 * its height whenever it changes, as {type: model.message, height: <CSS px>}, so a few lines on the host
 * page (docs/export.md) can size the iframe to the content. Target "*": the message is one number.
 * Nothing is posted outside a frame, and no message is ever read.
 *
 * The height is the bottom of the page's content (Panel's root elements may be display: contents, so
 * their children's boxes are measured), not the document's scroll height, which never drops below the
 * frame's own height and so could only grow.
 */
export function render({ model, el }) {
  el.style.display = "none";
  if (window.parent === window) return;
  var last = -1, queued = false, watched = new WeakSet();
  var ro = window.ResizeObserver ? new ResizeObserver(queue) : null;

  /* the page's top boxes: body's children, looking through display: contents wrappers (Panel's roots) */
  function boxes(node, depth, out) {
    if (node.nodeName === "SCRIPT") return out;
    if (depth < 4 && getComputedStyle(node).display === "contents") {
      for (var i = 0; i < node.children.length; i++) boxes(node.children[i], depth + 1, out);
    } else out.push(node);
    return out;
  }

  function post() {
    queued = false;
    var all = [], b = 0;
    for (var i = 0; i < document.body.children.length; i++) boxes(document.body.children[i], 0, all);
    for (var j = 0; j < all.length; j++) {
      var r = all[j].getBoundingClientRect();
      if (r.height > 0) b = Math.max(b, r.bottom);
      if (ro && !watched.has(all[j])) { watched.add(all[j]); ro.observe(all[j]); }  /* content grows or shrinks */
    }
    var h = Math.ceil(b + window.scrollY + (parseFloat(getComputedStyle(document.body).marginBottom) || 0));
    if (h <= 0 || h === last) return;
    last = h;
    window.parent.postMessage({ type: model.message, height: h }, "*");
  }

  function queue() { if (!queued) { queued = true; requestAnimationFrame(post); } }

  /* Panel adds its roots after this component renders: a MutationObserver on the body's own tree (not the
     panes' shadow roots) finds them; the ResizeObserver follows each one's size */
  new MutationObserver(queue).observe(document.body, { childList: true, subtree: true });
  window.addEventListener("resize", queue);
  window.addEventListener("load", queue);
  queue();
}
