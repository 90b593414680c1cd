"""The doctor's HTML report shows the stall forecast and the audit as tables whose cells are the JSON's values.

The page is parsed with the standard library's ``html.parser`` (tables read as text, as a browser shows them), and
each cell is compared with the diagnosis dict the JSON output prints, formatted as the text report formats it.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grpo_lab.doctor_report.audit import audit_html
from grpo_lab.doctor_report.report import _table, html_report
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.audit import LIST_MAX, audit
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.jsonable import jsonable
from grpo_lab.sims.record import read_record

ROOT = Path(__file__).resolve().parents[1]
STALLED = ROOT / "runs" / "broad-g4-dr_grpo-ds-lr0.0008-s1"  #: the shipped DAPO run that stalled at step 165
TRL_PLAIN = ROOT / "tests" / "fixtures" / "ingest" / "trl_matrix" / "plain" / "run"  #: written by TRL's GRPOTrainer


class Tables(HTMLParser):
    """``sections[h2 text]`` = the tables under that heading, each a list of rows of cell texts (header row first)."""

    def __init__(self):
        super().__init__()
        self.sections: dict[str, list] = {}
        self._heading = None
        self._in_h2 = False
        self._cell = None
        self._row = None

    def handle_starttag(self, tag, attrs):
        if tag == "h2":
            self._in_h2, self._heading = True, ""
        elif tag == "table":
            self.sections.setdefault(self._heading, []).append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "h2":
            self._in_h2 = False
        elif tag in ("td", "th"):
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr":
            self.sections[self._heading][-1].append(self._row)

    def handle_data(self, data):
        if self._in_h2:
            self._heading += data
        elif self._cell is not None:
            self._cell += data


def tables(page: str) -> dict[str, list]:
    p = Tables()
    p.feed(page)
    return p.sections


@pytest.fixture(scope="module")
def stalled():
    d = diagnose(read_record(STALLED))
    return json.loads(json.dumps(jsonable(d))), tables(html_report(d))  # the values --json prints


def test_stall_forecast_table_is_the_jsons(stalled):
    d, t = stalled
    sf = d["stall_forecast"]
    now_table, levels = t["Stall forecast"]
    assert now_table[0] == ["step", "rounds expected", "95th percentile", "P(stall)"]
    now = sf["now"]
    cap = sf["settings"]["cap_effective"]
    p95 = f">{cap}" if now["p95"] is None else str(now["p95"])  # past the cap: the step raises before it
    assert now_table[1] == [f"{now['step']:.0f} (last)", f"{now['expected']:.2f}", p95, percent(now["p_stall"])]
    steps = [float(s) for s in sf["series"]["step"]]
    for row in now_table[2:]:  # the forecast ahead: each row is one step of the JSON's series
        i = steps.index(float(row[0]))
        assert row[1] == f"{sf['series']['expected'][i]:.2f}"
        assert row[3] == percent(sf["series"]["p_stall"][i])
    assert len(now_table) >= 3
    assert [r[0] for r in levels[1:]] == [f"> {float(k):g}" for k in sf["stall"]]
    for row, st in zip(levels[1:], sf["stall"].values()):
        assert row[1] == ("-" if st["step"] is None else f"{st['step']:.0f}")


def test_transitions_and_samplers_tables_are_the_jsons(stalled):
    d, t = stalled
    tr = d["transitions"]
    if tr["available"]:
        (matrix,) = t["Transitions between visits"]
        assert [r[0] for r in matrix[1:]] == ["fail", "mixed", "pass"]
        for i, row in enumerate(matrix[1:]):
            for j, cell in enumerate(row[1:]):
                assert cell.startswith(percent(tr["matrix"][i][j])) and cell.endswith(f"({int(tr['counts'][i][j]):,})")
    (samplers,) = t["Samplers side by side"]
    assert [r[0] for r in samplers[1:]] == [r["label"] for r in d["samplers"]["rows"]]
    assert [r[1] for r in samplers[1:]] == [format(r["useful_per_1000"], ".1f") for r in d["samplers"]["rows"]]


def test_audit_tables_on_a_trl_record_are_the_jsons():
    rec = ingest(TRL_PLAIN, "trl")
    a = audit(rec)
    (checks, *rest) = tables(audit_html(a, _table))["Audit of the logged metrics"]
    assert [r[:3] for r in checks[1:]] == [[c["trainer"], c["metric"], f"{c['agree']} of {c['compared_steps']}"]
                                          for c in a["checks"]]
    sp = a["split"]
    assert sp["differ"] and sp["phantom"]["count"] > 0
    split = next(x for x in rest if x[0][0] == "classified by")
    tr, co = sp["training"], sp["correctness"]
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731  (the audit's text lines print shares so)
    assert split[1][1:] == [pct(tr["zero_advantage"]), pct(tr["all_pass"]), pct(tr["all_fail"])]
    assert split[2][1:] == [pct(co["zero_advantage"]), pct(co["all_pass"]), pct(co["all_fail"])]
    phantom = next(x for x in rest if x[0][0] == "step" and "training rewards" in x[0])
    assert len(phantom) - 1 == min(sp["phantom"]["count"], LIST_MAX)
    assert [r[4] for r in phantom[1:]] == [", ".join(f"{x:g}" for x in g["training_rewards"])
                                           for g in sp["phantom"]["groups"][:LIST_MAX]]


def test_prompt_text_in_the_audit_is_shown_as_text():
    rec = ingest(TRL_PLAIN, "trl")
    evil = "<img src=x onerror=alert(1)>"
    rec.meta["prompt_labels"] = [evil] * len(rec.meta.get("prompt_labels") or [evil] * 1000)
    page = audit_html(audit(rec), _table)
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    phantom = next(x for x in tables(page)["Audit of the logged metrics"] if "text" in x[0])
    assert all(row[2] == evil for row in phantom[1:])  # the parser reads back exactly the characters


def test_the_full_report_has_the_audit_section(stalled):
    _, t = stalled
    assert "Audit of the logged metrics" in t
