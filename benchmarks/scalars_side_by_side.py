"""The scalars-only fit beside the group-level fit on every shipped run and every ingested TRL / verl fixture
(docs/doctor.md, "The doctor on scalars").

For each record: the group-level figures the doctor computes from the groups (the trend's slope, the single Beta's
mean, the observed shares of the last 10 steps, the forecast crossing and the stall step) beside the same figures
from the record's per-step shares alone (``scalars_diagnose.side_by_side``, the stages of ``diagnose`` it needs).
Prints a markdown table.

    python benchmarks/scalars_side_by_side.py
"""

from __future__ import annotations

import time
from pathlib import Path

from grpo_lab.sims.doctor.fit import fit_beta
from grpo_lab.sims.doctor.forecast import fit_trend, forecast
from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.sims.doctor.scalars_diagnose import side_by_side
from grpo_lab.sims.doctor.stall import for_record
from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import read_record

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "ingest"


def records():
    for p in sorted((ROOT / "runs").rglob("run.json")):
        yield p.parent.relative_to(ROOT).as_posix(), read_record(p.parent), None, None
    for name, fmt in (("trl_matrix/doctor", "trl"), ("verl_matrix/dapo_filter", "verl"), ("verl_matrix/dapo", "verl"),
                      ("verl_matrix/naive", "verl")):
        d = FIX / name
        if (d / "run").exists():
            cfg = read_trainer_config(d / "trainer_config.json") if (d / "trainer_config.json").exists() else None
            yield f"ingested {name}", ingest(d / "run", fmt), 0.0, cfg


def one(record, tolerance, settings) -> dict:
    groups = run_groups(record, tolerance)
    counts = groups.counts()
    fc = forecast(groups)
    trend = fc.pop("_trend")
    stall = for_record(record, groups, trend if trend is not None else fit_trend(groups), settings)
    partial = {"forecast": fc, "fit": fit_beta(counts, groups.K), "stall_forecast": stall}
    return side_by_side(record, groups, partial, settings, fc["threshold"])


def _cell(row, key):
    v = row.get(key)
    if v is None:
        return "-"
    if row.get("step"):
        iv = row.get(key + "_interval") or [None, None]
        f = lambda x: "-" if x is None else f"{x:.0f}"  # noqa: E731
        return f"{f(v)} [{f(iv[0])}, {f(iv[1])}]"
    if row.get("share"):
        return f"{100 * v:.1f}%"
    se = row.get(key + "_se")
    return f"{v:.3g}" + (f" ± {se:.2g}" if se is not None else "")


def main() -> None:
    print("| record | " + " | ".join(["drift /100 steps", "mean pass rate", "all-pass last 10", "all-fail last 10",
                                        "mixed last 10", "expiry step", "stall step (P > 0.5)"]) + " | s |")
    print("| --- " * 9 + "|")
    for name, rec, tol, cfg in records():
        t = time.perf_counter()
        try:
            sb = one(rec, tol, cfg)
        except InputError as exc:  # the group-level doctor refuses it
            print(f"| {name} | groups: {exc} |" + " |" * 7, flush=True)
            continue
        el = time.perf_counter() - t
        if not sb["available"]:
            print(f"| {name} | {sb['reason']} |" + " |" * 7, flush=True)
            continue
        rows = [r for r in sb["rows"] if not r["what"].startswith("effective rate")]
        cells = [f"{_cell(r, 'groups')} / {_cell(r, 'scalars')}" for r in rows]
        print(f"| {name} | " + " | ".join(cells) + f" | {el:.1f} |", flush=True)


if __name__ == "__main__":
    main()
