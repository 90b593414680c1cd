"""The group path's back-test (``grpo-lab diagnose --backtest``'s ``backtest``) on every shipped record with groups:
per record the 90% predictive band's rows held / rows scored over the cuts (40/50/60/70% of the steps), the pooled
coverage, the median absolute error of the band's median (points) and the seconds; then every record pooled.

``--model`` picks the band: ``drift`` (the drift shapes, :func:`.drift_expiry.drift_band`, what the group path
reports) or ``trend`` (the per-prompt logistic trend it reported before, :func:`.forecast.band_at`); ``both``
prints the two side by side from one run; ``choice`` the model chosen per cut on the steps before it alone
(:func:`.expiry_choice.choose_expiry`; the cuts' choices listed, t = trend, d = drift); ``all`` the three.

Run: ``python benchmarks/group_backtest.py [RECORD ...] [--model both]`` (default: ``runs/*-s1`` and ``runs/lm/*``).
"""

from __future__ import annotations

import argparse
import glob
import inspect
import time

from grpo_lab.sims.doctor.backtest import backtest_trend
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.sims.record import read_record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="*")
    ap.add_argument("--model", default="both", choices=("drift", "trend", "both", "choice", "all"))
    args = ap.parse_args()
    paths = args.records or sorted(glob.glob("runs/*-s1")) + sorted(p for p in glob.glob("runs/lm/*") if "." not in p)
    has_model = "model" in inspect.signature(backtest_trend).parameters
    models = ["group trend"] if not has_model else {"drift": ["drift"], "trend": ["trend"],
                                                    "both": ["trend", "drift"], "choice": ["choice"],
                                                    "all": ["trend", "drift", "choice"]}[args.model]
    total = {m: [0, 0] for m in models}
    print("| record | model | held / scored at cuts | pooled | median abs. error (points) | s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for p in paths:
        try:
            groups = run_groups(read_record(p), None)
        except InputError as exc:
            print(f"| {p} | | not diagnosed: {exc} | | | |", flush=True)
            continue
        for m in models:
            t = time.perf_counter()
            bt = backtest_trend(groups, model=m) if has_model else backtest_trend(groups)
            s = time.perf_counter() - t
            if not bt["available"]:
                print(f"| {p} | {m} | not available: {bt['reason']} | | | {s:.1f} |", flush=True)
                continue
            per = ", ".join(f"{x['held']}/{x['scored']}" + (f" {x['choice']['chosen'][0]}" if x.get("choice") else "")
                            for x in bt["cuts"] if "held" in x)
            total[m][0] += bt["held"]
            total[m][1] += bt["scored"]
            print(f"| {p} | {bt['model']} | {per} | {bt['held']}/{bt['scored']} ({100 * bt['coverage']:.1f}%) | "
                  f"{100 * bt['median_abs_error']:.1f} | {s:.1f} |", flush=True)
    for m, (h, n) in total.items():
        print(f"| all records | {m} | | {h}/{n} ({100 * h / max(n, 1):.1f}%) | | |")


if __name__ == "__main__":
    main()
