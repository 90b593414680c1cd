/* grpo-lab cell painter: the prompt grid as one RGBA image, so a repaint is one putImageData.
 *
 * Drawing 600 (or 10,000) squares plus their + / - marks as glyphs costs a canvas path and a
 * style change per cell on every repaint; copying pre-drawn cell tiles into one image costs
 * almost nothing. No arithmetic here:
 * which tile a cell gets (its code) comes from the kernel, the tiles from Python
 * (lab.grid.cell_tiles). tests/test_lab_grid.py checks the image against
 * lab.grid.cell_image, the Python twin of paint().
 *
 *   paint(out, cols, P, code, x, y, tiles)
 *     out    Uint32Array(rows * P * cols * P): the image, row 0 at the bottom
 *     code   per prompt, the index of its tile (0 mixed, 1 all pass, 2 all fail, 3 grey)
 *     x, y   per prompt, its cell's column and row
 *     tiles  Uint32Array(n_tiles * P * P): tile t's row r (from the bottom) at (t * P + r) * P
 *
 *   canvas(el, geometry, code, x, y, tiles)
 *     the picture on a <canvas> (every grid view: lab, export, replay): sizes the canvas to
 *     cols * P by rows * P, paints and puts the image. Row 0 is at the bottom, so the page
 *     shows the canvas flipped (CSS scaleY(-1)).
 */
(function (root) {
  "use strict";

  function paint(out, cols, P, code, x, y, tiles) {
    var W = cols * P, T = P * P, n = code.length;
    for (var i = 0; i < n; i++) {
      var t = code[i] * T, o = y[i] * P * W + x[i] * P;
      for (var r = 0; r < P; r++, o += W - P) for (var c = 0; c < P; c++) out[o++] = tiles[t++];
    }
    return out;
  }

  function canvas(el, geometry, code, x, y, tiles) {
    var cols = geometry.cols, P = geometry.P, W = cols * P, H = geometry.rows * P;
    var ctx = el.__grpoCtx || (el.__grpoCtx = el.getContext("2d"));
    if (el.width !== W || el.height !== H) { el.width = W; el.height = H; el.__grpoImage = null; }
    var img = el.__grpoImage;
    if (!img) {
      img = el.__grpoImage = ctx.createImageData(W, H);
      el.__grpoPixels = new Uint32Array(img.data.buffer);
    } else if (el.__grpoCount !== code.length) {
      el.__grpoPixels.fill(0);
    }
    el.__grpoCount = code.length;
    paint(el.__grpoPixels, cols, P, code, x, y, tiles);
    ctx.putImageData(img, 0, 0);
  }

  root.grpoCells = { paint: paint, canvas: canvas };
})(typeof window !== "undefined" ? window : globalThis);
