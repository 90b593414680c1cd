"""Print docs/doctor.md's table "Figures on the shipped runs" from the doctor's JSON.

    python benchmarks/doctor_table.py runs/*-s1            # diagnose each run (defaults), print the table
    python benchmarks/doctor_table.py runs/lm/cpu-*        # runs the doctor refuses are listed under the table
    python benchmarks/doctor_table.py out/*.json           # saved `grpo-lab diagnose RUN --json` outputs
    python benchmarks/doctor_table.py --details runs/*-s1  # also the figures the text under the table quotes

A directory argument is diagnosed with the defaults through the CLI (`python -m grpo_lab.cli diagnose RUN
--json`, the same as `grpo-lab diagnose RUN --json`); a `.json` argument is read as such output. Each column is
read straight from the JSON (no figure is recomputed here):

- Beta fit: `fit.alpha`, `fit.beta`; chi-square p: `fit.gof.p_value`.
- unanimous observed / predicted: `observed_unanimous.total` / `predicted_unanimous.total`.
- windows outside: windows (of `len(windows)`) with `inside_all_pass` or `inside_all_fail` false.
- prompt-pooled model: `pooled.population` (`[w, alpha, beta]` per component) over `pooled.steps`; its check:
  `pooled.check.all_pass` / `.all_fail` `predicted` vs `observed`, "(outside)" when either is not `inside`.
- rho: `correlation.rho` +- `correlation.se.rho`.
- effective rate now: `forecast.rate_now` (the trend model at the last step).
- backtest MAE: `forecast.backtest.mae` / `.mae_rolling`.
- skip after 2: the `skip.backtest` row with `after_unanimous_draws` 2: `rollouts_saved_share` /
  `mixed_wrongly_skipped_share`.
- allocation vs uniform: `skip.allocation.allocated_useful_per_1000` vs `.uniform_useful_per_1000`.
- retire / hard / live: `prompts.counts`.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HEAD = ["run", "groups (per step)", "Beta fit (alpha, beta)", "chi-square p", "unanimous observed / predicted",
        "windows outside", "prompt-pooled model", "its check: all-pass / all-fail predicted vs observed", "rho",
        "effective rate now", "backtest MAE (per step / rolling)", "skip after 2: saved / mixed lost",
        "allocation vs uniform (per 1,000)", "retire / hard / live"]


def load(arg: str) -> tuple[str, dict | None, str]:
    """(label, the doctor's dict or None, the refusal line) for a run directory or a saved JSON file."""
    p = Path(arg)
    if p.suffix == ".json" and p.is_file():
        try:
            d = json.loads(p.read_text())
            return d["run"]["name"] or p.stem, d, ""
        except (ValueError, KeyError, TypeError):
            return p.stem, None, "not the output of grpo-lab diagnose --json (empty where the doctor refused the run)"
    res = subprocess.run([sys.executable, "-m", "grpo_lab.cli", "diagnose", str(p), "--json"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        return p.name, None, (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
    return p.name, json.loads(res.stdout), ""


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def chi_p(gof: dict) -> str:
    """The chi-square p-value; "not testable" when pooling left no degree of freedom (df <= 0)."""
    return f"{gof['p_value']:.2g}" if gof["p_value"] is not None else "not testable"


def windows_outside(d: dict) -> int:
    return sum(not (w["inside_all_pass"] and w["inside_all_fail"]) for w in d["windows"])


def skip_row(d: dict, n: int = 2) -> dict:
    return next(r for r in d["skip"]["backtest"] if r["after_unanimous_draws"] == n)


def row(name: str, d: dict) -> list[str]:
    """One markdown row; the column order is HEAD's."""
    f, pl, c, fc = d["fit"], d["pooled"], d["correlation"], d["forecast"]
    r = d["run"]
    if pl["available"]:
        pop = " + ".join(f"{w:.2f} B({a:.2f}, {b:.2f})" for w, a, b in pl["population"])
        pop = (pop if len(pl["population"]) > 1 else pop[5:]) + f", steps {pl['steps'][0]}-{pl['steps'][1]}"
        ck = pl["check"]
        check = (f"{ck['all_pass']['predicted']:.3f} vs {ck['all_pass']['observed']:.3f} / "
                 f"{ck['all_fail']['predicted']:.3f} vs {ck['all_fail']['observed']:.3f}"
                 + ("" if ck["all_pass"]["inside"] and ck["all_fail"]["inside"] else " (outside)"))
    else:
        pop, check = f"not fitted ({pl['reason']})", "-"
    rho = f"{c['rho']:.3f} ± {c['se']['rho']:.3f}" if c.get("available") else "-"
    bt = fc["backtest"]
    mae = f"{bt['mae']:.3f} / {bt['mae_rolling']:.3f}" if bt.get("available") else "-"
    sk, al, pc = skip_row(d), d["skip"]["allocation"], d["prompts"]["counts"]
    return [name, f"{r['groups']:,} ({r['groups'] / r['steps']:.0f})", f"{f['alpha']:.3f}, {f['beta']:.3f}",
            chi_p(f["gof"]), f"{d['observed_unanimous']['total']:.3f} / {d['predicted_unanimous']['total']:.3f}",
            f"{windows_outside(d)} of {len(d['windows'])}", pop, check, rho, f"{fc['rate_now']:.3f}", mae,
            f"{pct(sk['rollouts_saved_share'])} / {pct(sk['mixed_wrongly_skipped_share'])}",
            f"{al['allocated_useful_per_1000']:.1f} vs {al['uniform_useful_per_1000']:.1f}",
            f"{pc['retire']} / {pc['hard']} / {pc['live']}"]


def details(name: str, d: dict) -> str:
    """The figures the text under the table quotes, one run per paragraph."""
    f, pl, fc, tc = d["fit"], d["pooled"], d["forecast"], d["skip"]["temporal_consistency"]
    ou, pu = d["observed_unanimous"], d["predicted_unanimous"]
    out = [f"{name}: K = {d['run']['K']}, {d['run']['groups']:,} groups, {d['run']['steps']} steps, "
           f"{d['run']['prompts']} prompts",
           f"  unanimous total: observed {ou['total']:.3f}, predicted {pu['total']:.3f}, "
           f"gap {pu['total'] - ou['total']:+.3f}",
           f"  all-pass observed {pct(ou['all_pass'])} [{pct(ou['all_pass_interval'][0])}, "
           f"{pct(ou['all_pass_interval'][1])}] predicted {pct(pu['all_pass'])}; all-fail observed "
           f"{pct(ou['all_fail'])} [{pct(ou['all_fail_interval'][0])}, {pct(ou['all_fail_interval'][1])}] "
           f"predicted {pct(pu['all_fail'])}",
           f"  chi-square {f['gof']['statistic']:,.1f} on {f['gof']['df']} df, p = {chi_p(f['gof'])}",
           "  cells observed " + ", ".join(f"{x:.0f}" for x in d["cells"]["observed"])
           + "; fitted " + ", ".join(f"{x:.0f}" for x in d["cells"]["fitted"])]
    if pl["available"] and pl["mixture"].get("available"):
        m = pl["mixture"]
        out.append(f"  pooled ({pl['model']}): BIC Beta {pl['beta']['bic']:.1f}, mixture {m['bic']:.1f} "
                   f"(Beta minus mixture {pl['beta']['bic'] - m['bic']:+.1f}); components w {m['w']:.3f} mean "
                   f"{m['components'][0]['mean']:.3f}, w {1 - m['w']:.3f} mean {m['components'][1]['mean']:.3f}")
    elif pl["available"]:
        out.append(f"  pooled ({pl['model']}): Beta mean {pl['beta']['mean']:.3f}")
    if pl["available"]:
        for key in ("all_pass", "all_fail"):
            ck = pl["check"][key]
            out.append(f"  pooled check {key}: predicted {ck['predicted']:.3f}, observed {ck['observed']:.3f} "
                       f"[{ck['interval'][0]:.3f}, {ck['interval'][1]:.3f}], inside {ck['inside']}")
    bt = fc["backtest"]
    out.append(f"  forecast: {fc['status']}; rate now {fc['rate_now']:.3f} model, {fc['observed_rate_now']:.3f} "
               "observed" + (f"; backtest mean error {bt['mean_error']:+.3f}" if bt.get("available") else ""))
    out.append(f"  unanimous after unanimous {pct(tc['unanimous_given_unanimous']['share'])}, after mixed "
               f"{pct(tc['unanimous_given_mixed']['share'])}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="run directories (diagnosed here) or saved --json outputs")
    ap.add_argument("--details", action="store_true", help="also print the figures the text quotes")
    a = ap.parse_args(argv)
    done, refused = [], []
    for arg in a.runs:
        name, d, why = load(arg)
        (done.append((name, d)) if d is not None else refused.append((name, why)))
    if done:
        print("| " + " | ".join(HEAD) + " |")
        print("|" + " --- |" * len(HEAD))
        for name, d in done:
            print("| " + " | ".join(row(name, d)) + " |")
    for name, why in refused:
        print(f"refused: {name}: {why}")
    if a.details:
        for name, d in done:
            print()
            print(details(name, d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
