/* grpo-lab browser kernel: one lab view (rho = 0), computed in the browser.
 *
 * The single browser-side copy of sims.scenario.evaluate, used by the served lab
 * (instant dragging) and by the exported page. tests/test_kernel_parity.py runs it
 * in Chromium and checks it against the Python core.
 *
 *   data   {p0: Float64Array(n) starting pass rates,
 *           u: Float32Array(n * stride) rollout uniforms, row x = prompt x,
 *           stride: columns per row (>= K), gain: decay gain g}
 *   params {progress: t in [0, 1], K: group size <= stride,
 *           filter: bool, band_lo, band_hi}
 *
 *   p_t = p0 ** (1 / (1 + g t));  rollout i of prompt x passes iff u[x, i] < p_t;
 *   outcome 0 mixed, 1 all-pass, 2 all-fail;  kept = !filter || band_lo <= p_t <= band_hi;
 *   expected P(useful) = 1 - p^K - (1 - p)^K (0 when K = 1 or p is 0 or 1).
 *   Shares are over the kept prompts; NaN when none is kept.
 *
 * The hover (lab/static/gridview.js) asks two more things of one prompt, by the same rules:
 *   rollouts(data, x, rate, K, out)  out[i] = 1 iff rollout i of prompt x passes (u[x, i] < rate; rate is the
 *                                    shared rate q of sims.scenario, p_t when rho = 0), for i < K
 *   usefulProbability(p, K)          expected P(useful) of one group at rho = 0 (the formula above)
 *
 * The live lab's plots (lab/static/live_plots.js) ask three more things, by the same rules:
 *   usefulCurve(K, points)           expected P(useful) at `points` pass rates p = i / (points - 1) (rho = 0),
 *                                    as sims.outcomes.outcome_probabilities(p, K)["p_useful"]
 *   shareCurve(data, params, ts)     {t, exp, real, exp_f, real_f}: the expected and realised useful share at each
 *                                    progress in ts over all prompts, and over the band [band_lo, band_hi]
 *                                    (whatever params.filter says), as sims.sweep.useful_share_curve (rho = 0)
 *   histogram(view, bins, counts)    counts[b * 4 + c]: the prompts of an evaluated view (pass_rate, outcome,
 *                                    kept) by pass-rate bin b = min(floor(bins p), bins - 1) and column c = its
 *                                    outcome when kept, 3 when the filter removed it, as
 *                                    sims.scenario.outcome_histogram; NaN or out-of-range pass rates left out
 *
 * percent / fixed / fill print numbers exactly as sims.formatting and lab.grid.readout_html do.
 */
(function (root) {
  "use strict";

  /* P(useful) of one group given p^K and (1 - p)^K (evaluate has them already) */
  function useful(p, K, ap, af) { return (K === 1 || p === 0 || p === 1) ? 0 : 1 - ap - af; }

  function usefulProbability(p, K) { return useful(p, K, Math.pow(p, K), Math.pow(1 - p, K)); }

  function rollouts(data, x, rate, K, out) {
    out = out && out.length >= K ? out : new Uint8Array(K);
    var u = data.u, row = x * data.stride;
    for (var i = 0; i < K; i++) out[i] = u[row + i] < rate ? 1 : 0;
    return out;
  }

  function evaluate(data, params, out) {
    var p0 = data.p0, u = data.u, stride = data.stride;
    var n = p0.length, K = params.K | 0;
    var s = 1 / (1 + data.gain * params.progress);
    var lo = params.band_lo, hi = params.band_hi, filter = !!params.filter;
    out = out || {};
    var pt = out.pass_rate && out.pass_rate.length === n ? out.pass_rate : new Float64Array(n);
    var succ = out.successes && out.successes.length === n ? out.successes : new Int32Array(n);
    var outcome = out.outcome && out.outcome.length === n ? out.outcome : new Int8Array(n);
    var kept = out.kept && out.kept.length === n ? out.kept : new Uint8Array(n);
    var nKept = 0, sumP = 0, nMixed = 0, nPass = 0, nFail = 0, sumUseful = 0, sumAP = 0, sumAF = 0;
    for (var x = 0; x < n; x++) {
      var p = Math.pow(p0[x], s);
      pt[x] = p;
      var k = 0, row = x * stride;
      for (var i = 0; i < K; i++) if (u[row + i] < p) k++;
      succ[x] = k;
      var o = (K === 1) ? (k === 1 ? 1 : 2) : (k === K ? 1 : (k === 0 ? 2 : 0));
      outcome[x] = o;
      var keep = !filter || (p >= lo && p <= hi);
      kept[x] = keep ? 1 : 0;
      if (!keep) continue;
      nKept++;
      sumP += p;
      if (o === 0) nMixed++; else if (o === 1) nPass++; else nFail++;
      var ap = Math.pow(p, K), af = Math.pow(1 - p, K);
      sumUseful += useful(p, K, ap, af);
      sumAP += ap;
      sumAF += af;
    }
    var share = function (v) { return nKept ? v / nKept : NaN; };
    var usefulReal = share(nMixed), usefulExp = share(sumUseful);
    out.pass_rate = pt; out.successes = succ; out.outcome = outcome; out.kept = kept;
    out.summary = {
      mean_pass_rate: share(sumP),
      useful_share_expected: usefulExp,
      useful_share_realised: usefulReal,
      all_pass_share: share(nPass),
      all_fail_share: share(nFail),
      all_pass_share_expected: share(sumAP),
      all_fail_share_expected: share(sumAF),
      kept_share: nKept / n,
      n_prompts: n,
      n_kept: nKept,
      rollouts_per_useful_expected: usefulExp > 0 ? K / usefulExp : NaN,
      rollouts_per_useful_realised: usefulReal > 0 ? K / usefulReal : NaN,
      useful_per_1000_expected: 1000 * usefulExp,
      useful_per_1000_realised: 1000 * usefulReal
    };
    return out;
  }

  function usefulCurve(K, points, out) {
    out = out && out.length === points ? out : new Float64Array(points);
    for (var i = 0; i < points; i++) out[i] = usefulProbability(i / (points - 1), K);
    return out;
  }

  function shareCurve(data, params, ts) {
    var n = ts.length, c = {t: Float64Array.from(ts), exp: new Float64Array(n), real: new Float64Array(n),
                            exp_f: new Float64Array(n), real_f: new Float64Array(n)};
    var every = {progress: 0, K: params.K, filter: false, band_lo: params.band_lo, band_hi: params.band_hi};
    var band = {progress: 0, K: params.K, filter: true, band_lo: params.band_lo, band_hi: params.band_hi};
    var scratch = {};
    for (var i = 0; i < n; i++) {
      every.progress = band.progress = ts[i];
      var s = evaluate(data, every, scratch).summary;
      c.exp[i] = s.useful_share_expected; c.real[i] = s.useful_share_realised;
      s = evaluate(data, band, scratch).summary;
      c.exp_f[i] = s.useful_share_expected; c.real_f[i] = s.useful_share_realised;
    }
    return c;
  }

  function histogram(view, bins, counts) {
    var p = view.pass_rate, oc = view.outcome, kept = view.kept, n = p.length;
    counts = counts && counts.length === bins * 4 ? counts : new Int32Array(bins * 4);
    counts.fill(0);
    for (var x = 0; x < n; x++) {
      var q = p[x];
      if (!(q >= 0 && q <= 1)) continue;
      var b = Math.min(Math.floor(q * bins), bins - 1);
      counts[b * 4 + (kept[x] ? oc[x] : 3)]++;
    }
    return counts;
  }

  /* (100 x).toFixed(digits) + "%", the twin of sims.formatting.percent */
  function percent(x, digits) {
    if (!isFinite(x)) return "\u2013";
    return (100 * x).toFixed(digits === undefined ? 1 : digits) + "%";
  }

  function fixed(x, digits) {
    if (!isFinite(x)) return "\u2013";
    return x.toFixed(digits === undefined ? 1 : digits);
  }

  /* A readout template filled from a summary, the twin of lab.grid.readout_html:
   * every {{key:fmt}} (fmt pct, int or fixN) becomes the formatted value. Returns
   * {html, values}: the filled text and the values in order (one per data-v span). */
  function fill(template, summary) {
    var values = [];
    var html = template.replace(/\{\{(\w+):(\w+)\}\}/g, function (m, key, f) {
      var v = summary[key];
      var text = f === "pct" ? percent(v) : f === "int" ? String(v) : fixed(v, Number(f.slice(3)));
      values.push(text);
      return text;
    });
    return {html: html, values: values};
  }

  root.grpoKernel = { evaluate: evaluate, rollouts: rollouts, usefulProbability: usefulProbability, percent: percent,
                      fixed: fixed, fill: fill, usefulCurve: usefulCurve, shareCurve: shareCurve,
                      histogram: histogram };
})(typeof window !== "undefined" ? window : globalThis);
