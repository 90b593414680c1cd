/* grpo-lab cell painter: the prompt grid as one RGBA image, so a repaint is one drawImage.
 *
 * Drawing 600 (or 10,000) squares plus their + / - marks as Bokeh glyphs costs a canvas
 * path and a style change per cell on every repaint; copying pre-drawn cell tiles into
 * one image and letting Bokeh draw that image costs almost nothing. No arithmetic here:
 * which tile a cell gets (its code) comes from the kernel, the tiles from Python
 * (lab.grid.cell_tiles). tests/test_lab_grid.py checks the image against
 * lab.grid.cell_image, the Python twin of paint().
 *
 *   paint(out, cols, P, code, x, y, tiles)
 *     out    Uint32Array(rows * P * cols * P): the image, row 0 at the bottom (Bokeh's order)
 *     code   per prompt, the index of its tile (0 mixed, 1 all pass, 2 all fail, 3 grey)
 *     x, y   per prompt, its cell's column and row
 *     tiles  Uint32Array(n_tiles * P * P): tile t's row r (from the bottom) at (t * P + r) * P
 *
 *   image(holder, cells, geometry, tiles, column)
 *     paint the grid source's data `cells` (cells[column] as the codes, x, y) into a Bokeh ndarray
 *     kept on `holder` (reused while the grid's shape {cols, rows, P} holds) and return it, for
 *     image_rgba (lab.grid.Picture).
 *
 *   repaint(picture, cells)
 *     after browser code changed `cells` in place: paint the picture ({pixels, geometry, tiles,
 *     column}: lab.grid.Picture.js_arg()) and tell Bokeh its image changed.
 *
 *   canvas(el, geometry, code, x, y, tiles)
 *     the same picture on a plain <canvas> (the exported page, which has no Bokeh): sizes the
 *     canvas to cols * P by rows * P, paints and puts the image. Rows stay in Bokeh's order
 *     (row 0 at the bottom), so the page shows the canvas flipped (CSS scaleY(-1)).
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

  function image(holder, cells, geometry, tiles, column) {
    var cols = geometry.cols[0], rows = geometry.rows[0], P = geometry.P[0], code = cells[column || "code"];
    var H = rows * P, W = cols * P, n = code.length, img = holder.__grpoImage;
    if (!img || img.shape[0] !== H || img.shape[1] !== W) {
      var nd = root.Bokeh.require("core/util/ndarray");
      img = holder.__grpoImage = nd.ndarray(new Uint32Array(H * W), {dtype: "uint32", shape: [H, W]});
    } else if (holder.__grpoCount !== n) {
      img.fill(0);  /* fewer prompts on the same grid: clear the cells left over */
    }
    holder.__grpoCount = n;
    return paint(img, cols, P, code, cells.x, cells.y, tiles);
  }

  function repaint(picture, cells) {
    image(picture.pixels, cells, picture.geometry.data, picture.tiles.data.t, picture.column);
    picture.pixels.change.emit();
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

  root.grpoCells = { paint: paint, image: image, repaint: repaint, canvas: canvas };
})(typeof window !== "undefined" ? window : globalThis);
