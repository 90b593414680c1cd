r"""The doctor's HTML tables (lab/doctor_report) parsed with :mod:`html.parser` and checked against the JSON.

Each section's table (samplers, stall forecast, transitions, audit) is read back cell by cell and every number
is compared with the diagnosis dict it was printed from, to the precision it is printed at.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.doctor_report import html_report
from grpo_lab.doctor_report.audit import audit_html
from grpo_lab.doctor_report.samplers import HEAD
from grpo_lab.doctor_report.stall import ahead_rows
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.audit import audit
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import read_record
from grpo_lab.testing.report_cells import figure

FIX = Path(__file__).parent / "fixtures"
EVIL = "<script>alert(1)</script>&"


class Tables(HTMLParser):
    """Every ``<table class=...>``: class -> {"head": [...], "rows": [[cell text, ...], ...]}."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self._cur, self._cell, self._row, self.scripts = {}, None, None, None, 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "table" and a.get("class"):
            self._cur = self.tables.setdefault(a["class"], {"head": [], "rows": []})
        elif self._cur is not None and tag == "tr":
            self._row = []
        elif self._cur is not None and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if self._cur is None:
            return
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr":
            if self._cur["head"]:
                self._cur["rows"].append(self._row)
            else:
                self._cur["head"] = self._row
        elif tag == "table":
            self._cur = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables(page: str) -> Tables:
    t = Tables()
    t.feed(page)
    return t


def pct(s: str) -> float:
    return float(s.rstrip("%")) / 100


def close(cell: str, x, half_unit: float) -> bool:
    """A printed number equals ``x`` to its printed precision (half a unit of the last digit, plus float slack)."""
    return abs(float(cell.rstrip("%")) / (100 if cell.endswith("%") else 1) - x) <= half_unit + 1e-9


@pytest.fixture(scope="module")
def capped():
    """A run of the project's trainer that hit max_num_gen_batches (tests/fixtures/doctor/README.md)."""
    d = diagnose(read_record(FIX / "doctor" / "trainer-cap3"))
    return d, tables(html_report(d))


def test_samplers_table_equals_the_json(capped):
    d, t = capped
    tab = t.tables["doctor-samplers"]
    assert tab["head"] == HEAD and len(tab["rows"]) == len(d["samplers"]["rows"]) >= 7
    steps = d["run"]["steps"]
    assert d["samplers"]["settings"]["steps"] == steps
    for cells, r in zip(tab["rows"], d["samplers"]["rows"]):
        assert cells[0] == r["label"]
        (u, u_se, u_iv), (rp, _, _), (nt, nt_se, nt_iv) = map(figure, cells[1:4])
        assert close(u, r["useful_per_1000"], 0.05) and close(rp, r["rollouts_per_useful"], 0.05)
        assert close(nt, r["never_trained"], 0.0005)
        assert all(close(c, x, 0.05) for c, x in zip(u_iv, r["interval"]["useful_per_1000"]))  # the 95% interval
        assert all(close(c, x, 0.0005) for c, x in zip(nt_iv, r["interval"]["never_trained"]))
        assert (u_se is None) == ("useful_per_1000" not in r["mc_se"])  # simulated figures carry their MC SE
        if u_se is not None:
            assert close(u_se, r["mc_se"]["useful_per_1000"], 0.05)
        # expiry and shift in steps of the run (t = 1: its last step), never a t past the run's end
        t = r["expiry_t"]
        expires = figure(cells[4])[0]
        if t is None or t == 0:
            assert expires == ("beyond the run" if t is None else "already below")
        else:
            m = re.fullmatch(r"(?:after ([\d,]+) steps|beyond the run \(([\d,]+) steps\))", expires)
            assert m and (m[1] is not None) == (t <= 1), cells[4]
            assert abs(int((m[1] or m[2]).replace(",", "")) - t * steps) <= 0.5 + 1e-9
        shift = figure(cells[5])[0]
        if r["expiry_shift"] is not None:
            m = re.fullmatch(r"([+-][\d,]+) steps", shift)
            assert m and abs(int(m[1].replace(",", "")) - r["expiry_shift"] * steps) <= 0.5 + 1e-9, cells[5]
            assert m[1] != "-0"
        else:
            assert shift == "-"


def test_stall_tables_equal_the_json(capped):
    d, t = capped
    sf = d["stall_forecast"]
    assert sf["available"] and sf["settings"]["cap_effective"] == 3
    rows = t.tables["doctor-stall-ahead"]["rows"]
    idx = ahead_rows(sf)
    assert len(rows) == 1 + len(idx)
    now = sf["now"]
    assert int(rows[0][0]) == now["step"] and close(rows[0][1], now["expected"], 0.005)
    assert close(rows[0][3], now["p_stall"], 0.0005)
    assert rows[0][2] == (f">{3}" if now["p95"] is None else str(now["p95"]))
    ser = sf["series"]
    for cells, i in zip(rows[1:], idx):
        assert int(cells[0]) == round(ser["step"][i]) and close(cells[3], ser["p_stall"][i], 0.0005)
        assert cells[1] == "-" if not np.isfinite(ser["expected"][i]) else close(cells[1], ser["expected"][i], 0.005)
    levels = t.tables["doctor-stall-levels"]["rows"]
    assert [float(c[0]) for c in levels] == [float(k) for k in sf["stall"]]
    for cells, st in zip(levels, sf["stall"].values()):
        assert cells[1:] == ["-" if v is None else f"{v:.0f}" for v in (st["step"], *st["interval"])]


def test_transitions_table_equals_the_json(capped):
    d, t = capped
    tr = d["transitions"]
    assert tr["available"]
    tab = t.tables["doctor-transitions"]
    assert tab["head"] == ["from", "to fail", "to mixed", "to pass"] and len(tab["rows"]) == 3
    for i, cells in enumerate(tab["rows"]):
        for j, cell in enumerate(cells[1:]):
            m = re.fullmatch(r"([\d.]+%) \[([\d.]+%), ([\d.]+%)\] \(([\d,]+)\)", cell)
            assert m, cell
            assert close(m[1], tr["matrix"][i][j], 0.0005) and close(m[2], tr["interval_lo"][i][j], 0.0005)
            assert close(m[3], tr["interval_hi"][i][j], 0.0005) and int(m[4].replace(",", "")) == tr["counts"][i][j]


def test_audit_tables_equal_the_json_and_escape_the_prompt():
    """verl DAPO with the overlong penalty (tests/fixtures/ingest/verl_matrix/dapo): the phantom-gradient groups
    listed in HTML are the audit's, and a prompt's markup is shown as text, never run."""
    rec = ingest(FIX / "ingest" / "verl_matrix" / "dapo" / "run", "verl")
    a = audit(rec)
    g0 = a["split"]["phantom"]["groups"][0]
    g0["text"] = EVIL + g0["text"]
    page = audit_html(a)
    assert "<script>" not in page
    t = tables(page)
    assert t.scripts == 0
    checks = t.tables["doctor-audit-checks"]["rows"]
    assert [[c[0], c[1], int(c[3]), int(c[4]), int(c[5])] for c in checks] == [
        [c["trainer"], c["metric"], c["compared_steps"], c["agree"], len(c["disagreements"])] for c in a["checks"]]
    split = t.tables["doctor-audit-split"]["rows"]
    for cells, key in zip(split, ("training", "correctness")):
        x = a["split"][key]
        assert cells[0] == x["name"]
        assert all(close(c, x[k], 0.0005) for c, k in zip(cells[1:], ("zero_advantage", "all_pass", "all_fail")))
    ph = t.tables["doctor-audit-phantom"]["rows"]
    groups = a["split"]["phantom"]["groups"]
    assert len(ph) == len(groups) >= 1 and ph[0][2].startswith(EVIL)
    for cells, g in zip(ph, groups):
        assert int(cells[0]) == g["step"] and cells[1] == str(g["prompt_id"]) and cells[3] == g["correctness"]
        assert [float(x) for x in cells[4].split(", ")] == pytest.approx(g["training_rewards"], rel=1e-5)


def test_a_record_with_disagreements_lists_them():
    """TRL with logging_steps > 1: the logged frac_reward_zero_std disagrees on some steps; each is a row."""
    a = audit(ingest(FIX / "ingest" / "trl_matrix" / "logging_steps" / "run", "trl"))
    bad = [(c["metric"], x) for c in a["checks"] for x in c["disagreements"]]
    assert bad
    rows = tables(audit_html(a)).tables["doctor-audit-disagreements"]["rows"]
    assert len(rows) == len(bad)
    for cells, (metric, x) in zip(rows, bad):
        assert cells[0] == metric and int(cells[1]) == x["step"] and cells[4] == x["cause"]
        assert float(cells[2]) == pytest.approx(x["logged"], rel=1e-5) and float(cells[3]) == pytest.approx(
            x["recomputed"], rel=1e-5, abs=1e-9)
