/* grpo-lab browser kernel: one lab view (rho = 0), computed in the browser.
 *
 * The single browser-side copy of sims.scenario.evaluate (and of what the live plots and the stall overlay ask of
 * sims, below), used by the served lab (instant dragging) and by the exported page. tests/test_kernel_parity.py runs it
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
 * The live lab's stall overlay (live_plots.js) asks, by the rules of sims.loop_stall.loop_stall_curve (rho = 0):
 *   loopStall(data, params, ts, loop, share)
 *                                    {t, u, p, first_t}: for the trainer loop `loop` ({loop: "DAPO" or "GRPO",
 *                                    gen_batch, train_batch, cap, level, max_prompts}: lab.views.decay.loop_data, the
 *                                    core's STALL_LEVEL and MAX_PROMPTS among them, declared there only) at each
 *                                    progress in ts: u = the expected useful share of the prompts the loop draws
 *                                    (over the band [band_lo, band_hi] when params.filter, else over all the prompts,
 *                                    a population of more than max_prompts thinned as the core thins it: the sorted
 *                                    pass rates at floor((i + 1/2) n / max_prompts)); p = P(stall | t):
 *                                    DAPO P(Binomial(cap gen_batch, u) < train_batch) (binomBelow), GRPO
 *                                    (1 - u)^train_batch, u clipped to [0, 1], NaN where u is (nothing in the band);
 *                                    first_t = the first t with p > level, null if none. `share` (optional):
 *                                    shareCurve(data, params, ts) already computed, whose exp / exp_f are reused
 *   binomBelow(n, u, T)              P(Binomial(n, u) < T), integers n >= 0, T >= 1: the largest term's pmf in
 *                                    Loader's saddle-point form (R's dbinom: stirlerr, bd0) times the sum of the
 *                                    terms relative to it by the pmf's ratio; 1 for T > n or u = 0, else 0 for u = 1
 *                                    (relative error near 1e-13 up to n of 1e6; the core's 1 - P(Binomial >= T) is
 *                                    exact to 1e-16 absolute, tests/test_kernel_parity.py)
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

  /* ---- the stall overlay (sims.loop_stall) ---- */

  /* log of Stirling's error, log(n!) - (n + 1/2) log n + n - log sqrt(2 pi), for an integer n >= 1: from the exact
     factorial up to 15, else its asymptotic series (Loader 2000, as R's stirlerr) */
  function stirlerr(n) {
    if (n <= 15) {
      var f = 1;
      for (var i = 2; i <= n; i++) f *= i;
      return Math.log(f) - (n + 0.5) * Math.log(n) + n - 0.9189385332046728;
    }
    var nn = n * n, S0 = 1 / 12, S1 = 1 / 360, S2 = 1 / 1260, S3 = 1 / 1680, S4 = 1 / 1188;
    if (n > 500) return (S0 - S1 / nn) / n;
    if (n > 80) return (S0 - (S1 - S2 / nn) / nn) / n;
    if (n > 35) return (S0 - (S1 - (S2 - S3 / nn) / nn) / nn) / n;
    return (S0 - (S1 - (S2 - (S3 - S4 / nn) / nn) / nn) / nn) / n;
  }

  /* the deviance term x log(x / m) + m - x, without cancellation near x = m (Loader 2000, as R's bd0) */
  function bd0(x, m) {
    if (Math.abs(x - m) < 0.1 * (x + m)) {
      var v = (x - m) / (x + m), s = (x - m) * v, ej = 2 * x * v;
      v *= v;
      for (var j = 1; j < 1000; j++) {
        ej *= v;
        var s1 = s + ej / (2 * j + 1);
        if (s1 === s) return s1;
        s = s1;
      }
    }
    return x * Math.log(x / m) + m - x;
  }

  /* log P(Binomial(n, p) = k) for 0 <= k <= n, 0 < p < 1, q = 1 - p (Loader's saddle point form, as R's dbinom:
     relative error near 1e-15 whatever n, where a difference of log-gammas of 1e5 loses 1e-11) */
  function logBinomPmf(k, n, p, q) {
    if (k === 0) return p < 0.1 ? -bd0(n, n * q) - n * p : n * Math.log(q);
    if (k === n) return q < 0.1 ? -bd0(n, n * p) - n * q : n * Math.log(p);
    var lc = stirlerr(n) - stirlerr(k) - stirlerr(n - k) - bd0(k, n * p) - bd0(n - k, n * q);
    return lc - 0.5 * (1.8378770664093453 + Math.log(k) + Math.log1p(-k / n));
  }

  /* P(Binomial(n, u) < T) (integers n >= 0, T >= 1): the pmf at the largest of its terms (the mode, or T - 1 below
     it) times the sum of the terms relative to it, each from its neighbour by the pmf's ratio, from there down and
     up until a term adds less than 1e-17 of the sum (the terms fall monotonically away from the mode) */
  function binomBelow(n, u, T) {
    if (T > n) return 1;
    if (!(u > 0)) return 1;
    if (!(u < 1)) return 0;
    var q = 1 - u, mode = Math.min(n, Math.floor((n + 1) * u)), k0 = Math.min(T - 1, mode);
    var sum = 1, term = 1, k, down = q / u, up = u / q;
    for (k = k0; k > 0; k--) {
      term *= k / (n - k + 1) * down;
      sum += term;
      if (term < 1e-17 * sum) break;
    }
    for (term = 1, k = k0; k < T - 1; k++) {
      term *= (n - k) / (k + 1) * up;
      sum += term;
      if (term < 1e-17 * sum) break;
    }
    return Math.min(1, Math.exp(logBinomPmf(k0, n, u, q)) * sum);
  }

  /* the prompts of a population over :data:`sims.loop_stall.MAX_PROMPTS` (`max`) that u(t) averages without the
     band: the sorted pass rates' middle of each of `max` equal-count blocks, index floor((i + 1/2) n / max), as
     sims.loop_stall._thinned (kept for the last data asked: the population on screen) */
  var thinnedFor = {p0: null, max: 0, out: null};
  function thinned(p0, max) {
    if (p0.length <= max) return p0;
    if (thinnedFor.p0 === p0 && thinnedFor.max === max) return thinnedFor.out;
    var sorted = Float64Array.from(p0).sort(), n = p0.length, out = new Float64Array(max);
    for (var i = 0; i < max; i++) out[i] = sorted[Math.floor((i + 0.5) * n / max)];
    thinnedFor = {p0: p0, max: max, out: out};
    return out;
  }

  /* expected P(useful) averaged over the pass rates p0s at progress t (rho = 0), over those in [lo, hi] now when
     `band`; NaN when none is */
  function expectedShare(p0s, gain, t, K, band, lo, hi) {
    var s = 1 / (1 + gain * t), n = 0, sum = 0;
    for (var x = 0; x < p0s.length; x++) {
      var p = Math.pow(p0s[x], s);
      if (band && !(p >= lo && p <= hi)) continue;
      n++;
      sum += usefulProbability(p, K);
    }
    return n ? sum / n : NaN;
  }

  function loopStall(data, params, ts, loop, share) {
    var m = ts.length, t = Float64Array.from(ts), u = new Float64Array(m), p = new Float64Array(m), first = null;
    var filter = !!params.filter, K = params.K | 0, T = loop.train_batch, i;
    var pool = filter ? data.p0 : thinned(data.p0, loop.max_prompts), reuse = share && pool === data.p0;
    for (i = 0; i < m; i++) {
      u[i] = reuse ? (filter ? share.exp_f[i] : share.exp[i])
                   : expectedShare(pool, data.gain, ts[i], K, filter, params.band_lo, params.band_hi);
      var v = Math.min(1, Math.max(0, u[i]));
      if (!isFinite(u[i])) p[i] = NaN;
      else if (loop.loop === "DAPO") p[i] = binomBelow(loop.cap * loop.gen_batch, v, T);
      else p[i] = Math.pow(1 - v, T);
      if (first === null && p[i] > loop.level) first = t[i];
    }
    return {t: t, u: u, p: p, first_t: first};
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
                      histogram: histogram, loopStall: loopStall, binomBelow: binomBelow };
})(typeof window !== "undefined" ? window : globalThis);
