"""Each sampler's closed form or fast simulation (grpo_lab.sims.samplers) against a direct Monte Carlo of
the sampler, written here independently: loops over prompts and rollouts, one group at a time.

Tolerance: Z standard errors of the difference (the Monte Carlo's, plus the fast simulation's where it is
one), so a test fails only when the two disagree beyond sampling error (Z = 4: a false alarm in about
1 in 16,000 comparisons).
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.samplers import closed, simulate
from grpo_lab.sims.samplers.compare import SAMPLERS, beta_pass_rates, compare

Z = 4.0
N, K, EPOCHS = 30, 4, 3.0
P = beta_pass_rates((1.2, 1.5), N)  # spread over (0, 1): every sampler acts on some prompts
REPS = 1500


def _group(rng, p: float, k: int) -> int:
    """Passes among k rollouts, one uniform per rollout."""
    s = 0
    for _ in range(k):
        if rng.random() < p:
            s += 1
    return s


def _mean_se(values) -> tuple[float, float]:
    v = np.asarray(values, float)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size))


def _check(name, value, mc, se_value=0.0):
    mean, se = mc
    tol = Z * np.hypot(se, se_value)
    assert abs(value - mean) <= tol, f"{name}: {value:.5f} vs Monte Carlo {mean:.5f} +- {se:.5f} (tol {tol:.5f})"


def _epoch_visits(rng, prompts, per_visit, budget):
    """Yield prompt indices epoch by epoch in random order while a visit's rollouts fit in the budget."""
    spent = 0
    while True:
        for x in rng.permutation(prompts):
            if spent + per_visit > budget:
                return
            spent += per_visit
            yield int(x)


def _run_epochs(rng, p, k, prompts, per_visit, budget, train_size=None):
    """(useful per 1000 rollouts, never-trained share) of visiting ``prompts`` epoch by epoch."""
    trained, useful, spent = set(), 0, 0
    for x in _epoch_visits(rng, prompts, per_visit, budget):
        s = _group(rng, p[x], per_visit)
        spent += per_visit
        m = train_size or per_visit
        # the kept subset of m: the max-variance choice of j passes, searched over every feasible j
        best = max((j for j in range(m + 1) if j <= s and m - j <= per_visit - s), key=lambda j: j * (m - j))
        if 0 < best < m:
            useful += 1
            trained.add(x)
    return 1000 * useful / spent, 1 - len(trained) / len(p)


def test_plain_matches_monte_carlo():
    rng = np.random.default_rng(1)
    runs = [_run_epochs(rng, P, K, range(N), K, EPOCHS * N * K) for _ in range(REPS)]
    r = closed.plain(P, K, EPOCHS)
    _check("useful/1000", r["useful_per_1000"], _mean_se([a for a, _ in runs]))
    _check("never", r["never_trained"], _mean_se([b for _, b in runs]))


def test_band_matches_monte_carlo():
    rng = np.random.default_rng(2)
    lo, hi = 0.1, 0.85  # keeps 25 of 30, with prompts near both edges (not always useful)
    kept = [x for x in range(N) if lo <= P[x] <= hi]
    assert 0 < len(kept) < N and (EPOCHS * N / len(kept)) % 1 > 0.1  # a partial last epoch is exercised
    runs = [_run_epochs(rng, P, K, kept, K, EPOCHS * N * K) for _ in range(REPS)]
    r = closed.band(P, K, EPOCHS, lo, hi)
    _check("useful/1000", r["useful_per_1000"], _mean_se([a for a, _ in runs]))
    _check("never", r["never_trained"], _mean_se([b for _, b in runs]))


def test_pods_matches_monte_carlo():
    rng = np.random.default_rng(3)
    n = 2 * K  # EPOCHS K / n = 1.5 epochs of n rollouts: a partial last epoch
    runs = [_run_epochs(rng, P, K, range(N), n, EPOCHS * N * K, train_size=K) for _ in range(REPS)]
    r = closed.pods(P, K, EPOCHS, n)
    _check("useful/1000", r["useful_per_1000"], _mean_se([a for a, _ in runs]))
    _check("never", r["never_trained"], _mean_se([b for _, b in runs]))


def test_pods_balanced_split_is_the_max_variance_subset():
    for n in range(2, 9):
        for m in range(2, n + 1):
            for s in range(n + 1):
                j = int(closed.balanced_split(s, n, m))
                feasible = [i for i in range(m + 1) if i <= s and m - i <= n - s]
                assert j in feasible and j * (m - j) == max(i * (m - i) for i in feasible)


def test_knapsack_matches_monte_carlo_given_its_allocation():
    from grpo_lab.sims.doctor.skip import allocate

    rng = np.random.default_rng(4)
    kx, _, _ = allocate(P, K, 2 * K)
    assert kx.sum() <= N * K and len(set(kx.tolist())) > 2  # the budget is spread unevenly
    runs = []
    for _ in range(REPS):
        trained, useful, spent = set(), 0, 0
        for _e in range(int(EPOCHS)):
            for x in rng.permutation(N):
                if kx[x] == 0:
                    continue
                s = _group(rng, P[x], int(kx[x]))
                spent += int(kx[x])
                if 0 < s < kx[x]:
                    useful += 1
                    trained.add(int(x))
        runs.append((1000 * useful / spent, 1 - len(trained) / N))
    r = closed.knapsack(P, K, EPOCHS, 2 * K)
    _check("useful/1000", r["useful_per_1000"], _mean_se([a for a, _ in runs]))
    _check("never", r["never_trained"], _mean_se([b for _, b in runs]))


def test_knapsack_allocation_against_brute_force():
    """The greedy K_x (grpo_lab.sims.doctor.skip.allocate) against an exhaustive search of every split of
    the budget, on 60 random 4-prompt cases: within half of the largest first pair's gain, max_x u(p_x, 2) / 2
    (the greedy takes the first two rollouts as a pair; it is not always optimal: see docs/doctor.md)."""
    import itertools

    from grpo_lab.sims.doctor.skip import allocate
    from grpo_lab.sims.outcomes import p_useful

    rng = np.random.default_rng(12)
    splits = np.array(list(itertools.product(range(7), repeat=4)))  # every K_x in 0..6 for 4 prompts
    gaps = []
    for _ in range(60):
        p, k = rng.random(4), int(rng.integers(2, 5))
        kx, _, _ = allocate(p, k, 6)
        table = np.array([[float(p_useful(q, c)) if c > 0 else 0.0 for c in range(7)] for q in p])
        values = table[np.arange(4), splits].sum(axis=1)
        best = values[splits.sum(axis=1) <= k * 4].max()
        got = table[np.arange(4), kx].sum()
        assert kx.sum() <= k * 4
        assert best - got <= table[:, 2].max() / 2 + 1e-12
        gaps.append(best - got)
    assert np.median(gaps) < 1e-9  # optimal in most cases


def _mc_dapo(rng, p, k, batch, gen, cap, steps):
    """Step by step as verl's DAPO trainer: rounds of ``gen`` fresh prompts until >= batch useful groups
    (train the first batch of them) or ``cap`` rounds (a stall: nothing trained). Prompts are drawn
    independently and uniformly, the closed form's model of a dataset much larger than a step's draws."""
    rounds_per_step, stalls, useful, rollouts = [], 0, 0, 0
    for _ in range(steps):
        kept = rounds = 0
        while True:
            rounds += 1
            for _g in range(gen):
                x = int(rng.integers(len(p)))
                s = _group(rng, p[x], k)
                rollouts += k
                kept += 0 < s < k
            if kept >= batch:
                useful += batch
                break
            if rounds == cap:
                stalls += 1
                break
        rounds_per_step.append(rounds)
    return rounds_per_step, stalls, useful, rollouts


def test_dapo_rounds_stall_and_rate_match_monte_carlo():
    hard = beta_pass_rates((0.4, 3.0), 50)  # mostly all-fail: stalls happen
    batch, gen, cap, k = 6, 6, 3, 4
    rng = np.random.default_rng(5)
    per_rep = [_mc_dapo(rng, hard, k, batch, gen, cap, 40) for _ in range(300)]
    r = closed.dapo(hard, k, EPOCHS, batch, gen, cap)
    assert 0.02 < r["p_stall"] < 0.98
    _check("rounds", r["rounds_expected"], _mean_se([np.mean(a) for a, _, _, _ in per_rep]))
    _check("stall", r["p_stall"], _mean_se([s / 40 for _, s, _, _ in per_rep]))
    _check("useful/1000", r["useful_per_1000"], _mean_se([1000 * u / n for _, _, u, n in per_rep]))
    # the 95th percentile: the step needs more rounds than it with probability <= 5%, than one fewer > 5%
    nocap = closed.dapo_rounds(float(np.mean(closed.p_useful(hard, k))), batch, gen, 0)
    q = nocap["rounds_p95"]
    rounds = np.concatenate([a for a, _, _, _ in [_mc_dapo(rng, hard, k, batch, gen, 10**6, 40) for _ in range(50)]])
    assert np.mean(rounds > q) <= 0.05 + Z * np.sqrt(0.05 * 0.95 / rounds.size)
    assert np.mean(rounds > q - 1) > 0.05 - Z * np.sqrt(0.05 * 0.95 / rounds.size)


def test_dapo_never_trained_matches_monte_carlo():
    batch, gen, cap = 5, 6, 3
    rng = np.random.default_rng(6)
    budget = int(EPOCHS * N)  # draws
    runs = []
    for _ in range(REPS):
        order = [int(x) for _e in range(int(EPOCHS)) for x in rng.permutation(N)]
        pos, trained = 0, set()
        while pos < budget:
            kept, rounds = [], 0
            while pos + gen <= budget and rounds < cap:
                rounds += 1
                for x in order[pos:pos + gen]:
                    s = _group(rng, P[x], K)
                    if 0 < s < K:
                        kept.append(x)
                pos += gen
                if len(kept) >= batch:
                    trained.update(kept[:batch])
                    break
            else:
                if pos + gen > budget:
                    break
        runs.append(1 - len(trained) / N)
    mean, se = simulate.dapo_never_trained(P, K, EPOCHS, batch, gen, cap, reps=REPS, seed=7)
    _check("never", mean, _mean_se(runs), se)


def _mc_retire(rng, p, k, n_retire, budget):
    streak, active, trained = [0] * len(p), set(range(len(p))), set()
    useful = spent = 0
    while active:
        for x in rng.permutation(sorted(active)):
            if spent + k > budget:
                return 1000 * useful / spent, 1 - len(trained) / len(p)
            s = _group(rng, p[x], k)
            spent += k
            streak[x] = streak[x] + 1 if s == k else 0
            if 0 < s < k:
                useful += 1
                trained.add(int(x))
            if streak[x] >= n_retire:
                active.discard(int(x))
    return 1000 * useful / spent, 1 - len(trained) / len(p)


@pytest.mark.parametrize("n_retire", [1, 2])
def test_retirement_matches_monte_carlo(n_retire):
    easy = beta_pass_rates((3.0, 1.0), N)  # many all-pass groups: prompts do retire
    rng = np.random.default_rng(8 + n_retire)
    runs = [_mc_retire(rng, easy, K, n_retire, EPOCHS * N * K) for _ in range(REPS)]
    r = simulate.retirement(easy, K, EPOCHS, n_retire, reps=REPS, seed=9)
    assert r["retired_share"] > 0.2 and r["epochs"] > EPOCHS  # freed budget buys more epochs
    _check("useful/1000", r["useful_per_1000"], _mean_se([a for a, _ in runs]), r["useful_per_1000_se"])
    _check("never", r["never_trained"], _mean_se([b for _, b in runs]), r["never_trained_se"])


def _mc_greso(rng, p, k, p_easy, p_hard, budget):
    streak, last_pass, trained = [0] * len(p), [False] * len(p), set()
    useful = spent = 0
    while True:
        for x in rng.permutation(len(p)):
            keep = (p_easy if last_pass[x] else p_hard) ** streak[x]
            if rng.random() >= keep:
                continue  # skipped before any rollout
            if spent + k > budget:
                return 1000 * useful / spent, 1 - len(trained) / len(p)
            s = _group(rng, p[x], k)
            spent += k
            if 0 < s < k:
                useful += 1
                trained.add(int(x))
                streak[x] = 0
            else:
                streak[x] += 1
                last_pass[x] = s == k


def test_greso_matches_monte_carlo():
    rng = np.random.default_rng(10)
    runs = [_mc_greso(rng, P, K, 0.3, 0.6, EPOCHS * N * K) for _ in range(REPS)]
    r = simulate.greso(P, K, EPOCHS, 0.3, 0.6, reps=REPS, seed=11)
    assert r["skipped_share"] > 0.1
    _check("useful/1000", r["useful_per_1000"], _mean_se([a for a, _ in runs]), r["useful_per_1000_se"])
    _check("never", r["never_trained"], _mean_se([b for _, b in runs]), r["never_trained_se"])


def test_compare_rows_expiry_and_bad_input():
    from grpo_lab.sims.population import draw_population

    p0 = draw_population(2000).pass_rates
    out = compare(p0, 8, 0.0, steps=200)
    rows = {r["sampler"]: r for r in out["rows"]}
    assert list(rows) == list(SAMPLERS)
    plain = rows["plain"]
    # plain GRPO's rate is the effective group rate 1 - D_real, and it expires where that crosses 0.5
    from grpo_lab.sims.population import degeneracy_real
    from grpo_lab.sims.samplers.compare import at_progress

    assert plain["rate"] == pytest.approx(1 - degeneracy_real(p0, 8), rel=1e-12)
    assert plain["expiry_shift"] == 0.0
    t = plain["expiry_t"]
    from grpo_lab.sims.samplers.compare import sketch

    sk = sketch(p0)
    assert 1 - degeneracy_real(at_progress(sk, t - 0.002, 7.8408), 8) >= 0.5 >= \
        1 - degeneracy_real(at_progress(sk, t + 0.002, 7.8408), 8)
    assert rows["band"]["expiry_shift"] > 0  # dropping the easy prompts postpones the expiry
    assert rows["band"]["expiry_shift_steps"] == pytest.approx(rows["band"]["expiry_shift"] * 200)
    for r in out["rows"]:
        assert r["rollouts_per_useful"] == pytest.approx(1000 / r["useful_per_1000"])
    for bad in ({"epochs": 0}, {"threshold": 1.5}, {"band": (0.9, 0.1)}, {"p_easy": 2}, {"batch": 0},
                {"max_num_gen_batches": -1}, {"pods_factor": 1}):
        with pytest.raises(InputError):
            compare(p0, 8, **bad)
    with pytest.raises(InputError):
        compare(p0, 1)
    with pytest.raises(InputError):
        compare([0.5, 1.5], 8)


def test_allocation_useful_table_equals_the_core():
    """The running-product table the allocation uses against grpo_lab.sims.outcomes.p_useful (logarithms)."""
    from grpo_lab.sims.doctor.skip import _useful_table
    from grpo_lab.sims.outcomes import p_useful

    p = np.concatenate([np.random.default_rng(13).random(3000), [0.0, 1.0, 1e-12, 1 - 1e-12, 0.5]])
    want = p_useful(p[:, None], np.arange(1, 65)[None, :])
    assert np.max(np.abs(_useful_table(p, 64) - want)) < 1e-14


def test_a_threshold_no_sampler_can_reach_at_k_gives_no_expiry_and_says_why():
    """At K = 2 a group is mixed with chance at most 1/2 (at p = 1/2), so under the default threshold of 0.5 every
    sampler's rate starts below it: the comparison gives no expiry rather than "already below" for all seven, and
    says why; the report's table shows "-" there. Just under the bound the search runs as before."""
    from grpo_lab.doctor_report.samplers import samplers_text

    p0 = beta_pass_rates((2.0, 2.0), 300)
    out = compare(p0, 2, threshold=0.5, reps=2)
    assert all(r["expiry_t"] is None and r["expiry_shift"] is None for r in out["rows"])
    note = out["settings"]["expiry_unreachable"]
    assert "K = 2" in note and "at most 0.5" in note and "give a lower threshold" in note
    text = "\n".join(samplers_text(out))
    assert "already below" not in text and "Expiry: none: " in text
    # the most any sampler's rate reaches is the closed form's at p = 1/2, 1 - 2^(1 - K), computed here directly
    assert max(r["rate"] for r in out["rows"]) <= 1 - 2.0 ** (1 - 2) + 1e-12
    below = compare(p0, 2, threshold=0.45, reps=2)
    assert below["settings"]["expiry_unreachable"] is None
    assert [r["expiry_t"] for r in below["rows"]][0] is not None
    assert compare(p0, 4, threshold=0.5, reps=2)["settings"]["expiry_unreachable"] is None
