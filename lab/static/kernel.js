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
                      fixed: fixed, fill: fill };
})(typeof window !== "undefined" ? window : globalThis);
