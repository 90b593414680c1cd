"""A sampler expected to train on no useful group within the budget prints "-" and says so (issue #39, the
samplers table on a saturated run): DAPO on a saturated tinker run printed 3.6e17 rollouts per useful group, the
round-off of 1 - P(stall) = 1 - 0.9999999999999999. Now P(a step fills) is the Binomial survival function (checked
here against a log-space sum written out), and a row whose expected useful groups over all its rollouts are below
one reads inf (JSON null) with words, the threshold checked on both sides with plain GRPO's closed form."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from grpo_lab.doctor_report.samplers import HEAD, samplers_text, table_rows
from grpo_lab.sims.outcomes import p_useful
from grpo_lab.sims.samplers import compare
from grpo_lab.sims.samplers.closed import dapo_rounds
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.real_logs import REAL


def _log_tail(B: int, n: int, u: float) -> float:
    """log P(Bin(n, u) >= B), summed term by term in log space."""
    k = np.arange(B, n + 1)
    terms = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) + k * math.log(u) + (n - k) * math.log1p(-u)
    return float(logsumexp(terms))


@pytest.mark.parametrize("u,B,G,M", [(0.0078, 100, 100, 10), (0.02, 32, 32, 10), (0.3, 32, 32, 10), (0.6, 8, 16, 2)])
def test_the_chance_a_step_fills_is_the_binomial_tail(u, B, G, M):
    r = dapo_rounds(u, B, G, M)
    want = _log_tail(B, M * G, u)
    assert math.log(r["p_fill"]) == pytest.approx(want, rel=1e-9, abs=1e-9)
    assert r["p_fill"] + r["p_stall"] == pytest.approx(1.0, abs=1e-12)


def _plain(u_target: float, n: int = 10, epochs: float = 1.0, K: int = 4):
    """compare() on n prompts of one pass rate p with u(p, K) = u_target; its plain GRPO row."""
    lo, hi = 1e-9, 0.5  # u rises with p on (0, 1/2)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if p_useful(mid, K) < u_target else (lo, mid)
    rows = compare(np.full(n, lo), K, epochs=epochs, reps=2)["rows"]
    return next(r for r in rows if r["sampler"] == "plain")


def test_the_threshold_is_one_useful_group_expected_in_the_budget():
    """10 prompts, 1 epoch, K = 4: plain GRPO expects 10 u useful groups from its 40 rollouts."""
    below = _plain(0.05)  # 0.5 expected
    assert math.isinf(below["rollouts_per_useful"]) and below["no_useful"].startswith("no useful group expected: 0.5 ")
    above = _plain(0.2)  # 2 expected: a rate, K / u = 20 rollouts per useful group
    assert above["no_useful"] is None and above["rollouts_per_useful"] == pytest.approx(20.0, rel=1e-6)


def test_a_saturated_real_run_prints_a_dash_and_words(tmp_path):
    """tinker-arithmetic (K = 4, 100 groups a step, its zero-std share 96-100% from step 20) ingested as given
    (its config.json beside it, whose sizes the record keeps) and diagnosed on the command line. tinker has no
    dynamic sampling and so no cap: at the trainer's sizes the samplers' DAPO row is uncapped and fills every step
    (its rollouts per useful group near plain GRPO's); with a cap of 10 rounds (the flag over the kept sizes) every
    capped step stalls and the row says so in words."""
    name = "tinker-arithmetic-gs4-gpb100"
    proc = run_cli("ingest", REAL / name, "--out", tmp_path / "rec")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("diagnose", tmp_path / "rec", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["sampler"]: r for r in json.loads(proc.stdout)["samplers"]["rows"]}
    assert rows["dapo"]["details"]["p_fill"] == 1.0 and rows["dapo"]["no_useful"] is None
    assert rows["dapo"]["rollouts_per_useful"] == pytest.approx(rows["plain"]["rollouts_per_useful"], rel=0.05)
    proc = run_cli("diagnose", tmp_path / "rec", "--json", "--max-num-gen-batches", "10")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["samplers"]["settings"]["max_num_gen_batches"] == 10 and d["samplers"]["settings"]["gen_batch"] == 100
    dapo = next(r for r in d["samplers"]["rows"] if r["sampler"] == "dapo")
    assert dapo["rollouts_per_useful"] is None and "no useful group expected" in dapo["no_useful"]
    assert dapo["details"]["p_fill"] < 1e-50  # every capped step stalls: the exact tail, not 1.1e-16
    cells = next(c for c in table_rows(d["samplers"]) if c[0] == dapo["label"])
    assert cells[HEAD.index("rollouts / useful group")] == "-"
    assert any(x.strip() == f"{dapo['label']}: {dapo['no_useful']}" for x in samplers_text(d["samplers"]))
    plain = next(r for r in d["samplers"]["rows"] if r["sampler"] == "plain")
    assert plain["no_useful"] is None and plain["rollouts_per_useful"] > 0
