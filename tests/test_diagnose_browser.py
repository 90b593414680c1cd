"""Replay's Diagnose in real Chromium: the doctor's report as tables and inline plots, its figures those of the
command line's ``grpo-lab diagnose --json``, folded into a box that scrolls (the page stays short), no "-0",
no script, no request to another host, no axe-core violation (WCAG A/AA).

Every expected number is read from the JSON the command line prints for the same record (``run_cli``), never
from the lab's code; the shown tables are read back from the page cell by cell.
"""

from __future__ import annotations

import json
import re

import pytest

from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.record import write_record
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.lab_server import TEXTS_OF_CLASS, open_local, serve_local
from grpo_lab.testing.page import FIND, axe_violations
from grpo_lab.testing.report_cells import figure
from grpo_lab.testing.synthetic_record import synthetic_record

pytestmark = [pytest.mark.browser]

#: JavaScript: the report's tables by class: {class: {head: [...], rows: [[...], ...]}}, and its figures
REPORT = f"""() => {{
  const r = ({FIND})('.doctor-report');
  if (!r) return null;
  const tables = {{}};
  for (const t of r.querySelectorAll('table[class]')) {{
    const rows = Array.from(t.querySelectorAll('tr')).map(tr => Array.from(tr.cells).map(c => c.textContent.trim()));
    tables[t.className] = {{head: rows[0], rows: rows.slice(1)}};
  }}
  const box = r.getRootNode().host.getBoundingClientRect();
  return {{tables, svgs: r.querySelectorAll('svg').length, scripts: r.querySelectorAll('script').length,
          open: Array.from(r.querySelectorAll('details[open] > summary')).map(s => s.textContent.trim()),
          text: r.innerText, box: box.height, verdict: r.querySelector('.doctor-samplers-verdict').textContent}};
}}"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    write_record(root / "synthetic", synthetic_record(n_prompts=64, steps=40, seed=0, name="synthetic"))
    return root


def test_diagnose_shows_the_json_figures_as_tables_and_plots(page, run_dir):
    import panel as pn

    from grpo_lab.access import PageAccess

    res = run_cli("diagnose", run_dir / "synthetic", "--json")
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    srv, url = serve_local(lambda: pn.Column(PageAccess(), ReplayView(runs_root=run_dir)))
    try:
        page.set_viewport_size({"width": 1440, "height": 900})
        outside = open_local(page, url, f"({TEXTS_OF_CLASS})('replay-step').length > 0")
        before = page.evaluate("() => document.documentElement.scrollHeight")
        page.locator(".replay-diagnose-button button").click()
        page.locator(".doctor-lab-link").wait_for(timeout=60_000)
        got = page.evaluate(REPORT)
        height = page.evaluate("() => document.documentElement.scrollHeight")
        violations = axe_violations(page)  # WCAG A/AA with the report in (its scroll box reachable by keyboard)
    finally:
        srv.stop()
    assert outside == [] and page.console_errors == [] and violations == [], violations
    # pictures: the fit against observed, the forecast, the samplers' chart (and the K what-if, folded)
    assert got["svgs"] >= 4 and got["scripts"] == 0
    assert got["open"][:3] == ["Fit and its check", "Forecast", "Samplers side by side"], got["open"]
    assert "Prompt lists" not in got["open"] and "The report as text" not in got["open"]
    # the page does not grow by the report: it scrolls in a box of at most 85% of the window (the page grows by it)
    assert got["box"] <= 0.85 * 900 + 1 and height - before <= 0.85 * 900 + 60, (got["box"], before, height)
    assert not re.search(r"(?<![\w.])[-\u2212]0(?:\.0+)?(?![\w.])", got["text"]), "a '-0' in the report"
    # samplers: every row's numbers, the expiry in steps or beyond the run
    tab = got["tables"]["doctor-samplers"]
    assert tab["head"][4] == "expires" and len(tab["rows"]) == len(d["samplers"]["rows"]) == 7
    steps = d["run"]["steps"]
    for cells, r in zip(tab["rows"], d["samplers"]["rows"]):
        use, never, expires = (figure(cells[i])[0] for i in (1, 3, 4))
        assert cells[0] == r["label"] and use == f"{r['useful_per_1000']:.1f}"
        assert never == percent(r["never_trained"])
        t = r["expiry_t"]
        assert expires == ("beyond the run" if t is None else "already below" if t == 0 else
                            f"after {t * steps:,.0f} steps" if t <= 1 else f"beyond the run ({t * steps:,.0f} steps)")
    # the verdict's sampler is the one with the most useful groups per 1,000 rollouts
    best = max((r for r in d["samplers"]["rows"] if r["sampler"] != "plain"), key=lambda r: r["useful_per_1000"])
    plain = d["samplers"]["rows"][0]
    if best["useful_per_1000"] > plain["useful_per_1000"]:
        assert f", {best['label']} gives " in got["verdict"] and percent(best["never_trained"]) in got["verdict"]
    # transitions: each cell's share, interval and count
    tr = d["transitions"]
    rows = got["tables"]["doctor-transitions"]["rows"]
    for i, cells in enumerate(rows):
        for j, cell in enumerate(cells[1:]):
            assert cell == (f"{percent(tr['matrix'][i][j])} [{percent(tr['interval_lo'][i][j])}, "
                            f"{percent(tr['interval_hi'][i][j])}] ({int(tr['counts'][i][j]):,})")
    # the fit: alpha and beta as printed, the observed and predicted unanimous shares
    f = d["fit"]
    assert f"alpha {f['alpha']:.3f}" in got["text"] and f"beta {f['beta']:.3f}" in got["text"]
    fit_rows = {row[0]: row for row in got["tables"]["doctor-fit"]["rows"]}
    for key in ("all_pass", "all_fail"):
        row = fit_rows[key.replace("_", "-")]
        assert row[1] == percent(d["observed_unanimous"][key]) and row[3] == percent(d["predicted_unanimous"][key])

