r"""The doctor's reports print the groups per logged row two ways (issue #39 item 2): the trainer's arithmetic and
the lattice of the logged shares, with their disagreement named; the HTML escapes what it prints. Checked on
real logs (tests/fixtures/real), the figures against index.json (written from each run's config by hand)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grpo_lab.doctor_report import html_report, text_report
from grpo_lab.doctor_report.groups_per_row import groups_per_row_lines
from grpo_lab.sims.doctor import diagnose
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.real_logs import read_real

REAL = Path(__file__).parent / "fixtures" / "real"
INDEX = json.loads((REAL / "index.json").read_text())
EVIL = "<script>alert(1)</script>&"


class Para(HTMLParser):
    """The text of every ``<p class="doctor-groups-per-row">`` (its ``<br>`` as line breaks), and any script."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paras, self._in, self.scripts = [], False, 0

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts += 1
        if tag == "p" and dict(attrs).get("class") == "doctor-groups-per-row":
            self._in = True
            self.paras.append("")
        elif tag == "br" and self._in:
            self.paras[-1] += "\n"

    def handle_endtag(self, tag):
        if tag == "p":
            self._in = False

    def handle_data(self, data):
        if self._in:
            self.paras[-1] += data


def _parse(page: str) -> Para:
    p = Para()
    p.feed(page)
    return p


@pytest.mark.parametrize("name", ["trl-chaos-economy-unified", "trl-chaos-economy-named"])
def test_both_figures_and_the_verdict_in_text_and_html(name):
    f = INDEX[name]
    d = diagnose(read_real(name))
    text = text_report(d).splitlines()
    i = next(j for j, x in enumerate(text) if x.startswith("groups per logged row:"))
    arith, lattice = text[i + 1], text[i + 2]
    assert arith.startswith(f"  trainer's arithmetic: {f['groups_per_row']:g} (")
    assert lattice.startswith(f"  share lattice: {f['lattice']:g} (")
    disagree = f["groups_per_row"] != f["lattice"]
    if disagree:  # the config's 2.5 is refuted by the shares: the lattice's figure is used, and said to be
        assert text[i] == f"groups per logged row: {f['lattice']:g} (from the lattice of the logged shares)"
        assert f"they DISAGREE: a logged share is not a multiple of 1/{f['groups_per_row']:g}" in lattice
    else:
        assert text[i] == f"groups per logged row: {f['groups_per_row']:g} (from the trainer's arithmetic)"
        assert lattice.endswith("they agree")
    page = _parse(html_report(d))
    assert page.paras == ["\n".join(x.strip() for x in text[i:i + 3])]  # the same words at the top of the page
    assert ("DISAGREE" in page.paras[0]) == disagree


def test_html_escapes_what_it_prints():
    d = diagnose(read_real("trl-chaos-economy-unified"))
    d["run"]["source"]["groups_per_row"]["config_how"] = EVIL
    page = html_report(d)
    p = _parse(page)
    assert p.scripts == 0 and EVIL not in page
    assert f"trainer's arithmetic: 2.5 ({EVIL})" in p.paras[0]


def test_a_record_with_no_figure_prints_nothing():
    assert groups_per_row_lines(None) == [] and groups_per_row_lines({}) == []


def test_ingest_prints_the_same_lines(tmp_path):
    name = "trl-chaos-economy-unified"
    f = INDEX[name]
    proc = run_cli("ingest", REAL / name / f["file"], "--out", tmp_path / "rec", "--num-generations", f["K"],
                   "--trainer-config", REAL / name / f["config"])
    assert proc.returncode == 0, proc.stderr
    want = groups_per_row_lines(read_real(name).meta["source"]["groups_per_row"])
    out = proc.stdout.splitlines()
    i = out.index(want[0])
    assert out[i:i + 3] == want and "DISAGREE" in want[2]
