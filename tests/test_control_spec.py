"""Each control's label, bounds, step and default are declared once, on its parameter (GridControls, LabState,
AdvantageState), and every place that shows the control reads them from there: the grid's markup (served lab and
exported page), the side controls' spec, the Samplers and Advantages tabs' sliders."""

from __future__ import annotations

import html
import re
from pathlib import Path

import param
import pytest

from grpo_lab.grid.markup import controls_html
from grpo_lab.grid.spec import VIEW_CONTROLS, GridControls, control_spec
from grpo_lab.state import AdvantageState, LabState
from grpo_lab.views.side_controls import FIELDS, side_spec

LAB = Path(__file__).resolve().parents[1] / "lab"
VALUES = {"progress": 0.3, "K": 8, "filter": True, "band_lo": 0.2, "band_hi": 0.8}
#: where the labels are declared: the parameters' classes
DECLARED = {LAB / "grid" / "spec.py", LAB / "state.py"}


def labels() -> dict[str, str]:
    out = {name: GridControls.param[name].label for name in (*VIEW_CONTROLS, "rho")}
    out.update({name: LabState.param[name].label for name in FIELDS})
    return out


def test_every_control_has_a_label_of_its_own():
    names = labels()
    assert all(names.values()) and len(set(names.values())) == len(names), names
    assert AdvantageState.param.G.label == GridControls.param.K.label  # the same quantity, the same name


def test_the_grid_markup_shows_each_controls_label_and_bounds_from_the_spec():
    spec = control_spec()
    markup = controls_html(VALUES, spec)
    for name in VIEW_CONTROLS:
        p, c = GridControls.param[name], spec["controls"][name]
        assert c["label"] == p.label and c["default"] == p.default
        if isinstance(p, param.Boolean):
            assert html.escape(p.label) in markup
            continue
        assert (c["min"], c["max"]) == p.bounds
        tag = re.search(rf'<input[^>]*id="gx-{name.replace("_", "-")}"[^>]*>', markup).group(0)
        assert f'aria-label="{html.escape(p.label, quote=True)}"' in tag
        assert f'min="{p.bounds[0]}"' in tag and f'max="{p.bounds[1]}"' in tag


def test_the_side_controls_read_their_labels_and_bounds_from_the_state():
    spec = side_spec()["controls"]
    for name in FIELDS:
        p = LabState.param[name]
        assert spec[name]["label"] == p.label
        if spec[name]["kind"] == "select":  # a choice: its options are the parameter's objects
            assert spec[name]["options"] == list(p.objects)
        else:
            assert (spec[name]["min"], spec[name]["max"]) == p.bounds


def test_a_label_changed_on_its_parameter_shows_everywhere(monkeypatch):
    monkeypatch.setattr(GridControls.param.K, "label", "Rollouts per prompt K")
    monkeypatch.setattr(LabState.param.a, "label", "Beta alpha")
    assert 'aria-label="Rollouts per prompt K"' in controls_html(VALUES, control_spec())
    assert side_spec()["controls"]["a"]["label"] == "Beta alpha"


@pytest.mark.parametrize("label", sorted(set(labels().values())))
def test_no_other_file_types_a_controls_label(label):
    """A label typed as a string literal (or as markup text) anywhere but its declaration would drift from it."""
    quoted = re.compile("[\"'>]" + re.escape(label) + "[\"'<]")
    offenders = [str(f.relative_to(LAB)) for f in sorted(LAB.rglob("*")) if f.suffix in (".py", ".js", ".css", ".html")
                 and f not in DECLARED and "testing" not in f.parts and quoted.search(f.read_text())]
    assert offenders == [], offenders


def _view_parser():
    import argparse

    from grpo_lab.commands._args import add_view_arguments

    p = argparse.ArgumentParser()
    add_view_arguments(p)
    return p


def test_the_command_lines_options_are_read_from_the_parameters():
    """Each view option's flag, type, default and help (label, bounds) is its LabState parameter's."""
    from grpo_lab.grid.spec import VIEW_OPTIONS as VIEW_ARGUMENTS, cli_flag

    actions = {a.dest: a for a in _view_parser()._actions}
    for name in VIEW_ARGUMENTS:
        p, action = LabState.param[name], actions[name]
        assert action.option_strings == [cli_flag(name)] and action.default == p.default
        assert action.type is (int if isinstance(p, param.Integer) else float)
        assert p.label in action.help
        if name != "n_prompts":  # the prompt count's upper bound is each command's own
            assert f"in [{p.bounds[0]:g}, {p.bounds[1]:g}]" in action.help or f"[{p.bounds[0]}, {p.bounds[1]}]" in action.help
    # the flags are the names the commands' users type, and the URL keys are the same parameters' names
    assert [cli_flag(n) for n in VIEW_ARGUMENTS] == ["--n-prompts", "--a", "--b", "--seed", "--progress", "--K"]
    from grpo_lab.state import URL_PARAMS
    assert all(name in LabState.param for name in URL_PARAMS)


def test_the_url_keys_and_the_pages_watch_list_are_the_states_controls():
    """A control added to LabState (or GridControls) is a URL key and redraws the page without a list to edit:
    URL_PARAMS is every parameter of the state but its name and notice, and the live view watches exactly it."""
    from grpo_lab.state import URL_PARAMS, PlayState
    from grpo_lab.views.live import LiveLab

    assert set(URL_PARAMS) == set(LabState.param) - {"name", "notice"} and len(set(URL_PARAMS)) == len(URL_PARAMS)
    lab = LabState()
    LiveLab(lab, PlayState())
    watched = {name for name, kinds in lab.param.watchers.items() for w in kinds.get("value", ())
               if getattr(w.fn, "__name__", "") == "_changed"}
    assert watched == set(URL_PARAMS)


def test_a_default_and_label_changed_on_the_parameter_reach_the_command_line(monkeypatch):
    monkeypatch.setattr(LabState.param.K, "default", 12)
    monkeypatch.setattr(LabState.param.seed, "label", "Population seed")
    p = _view_parser()
    assert p.parse_args([]).K == 12 and p.parse_args(["--K", "5"]).K == 5
    assert "Population seed" in p.format_help()


def test_the_exported_page_and_its_command_line_name_the_options_from_the_spec():
    from grpo_lab.export import ExportSpec, command_line, page_state
    from grpo_lab.grid.spec import cli_flag

    spec = ExportSpec()
    state = page_state(spec, [], "decay.html")
    assert all(state["flags"][n] == cli_flag(n) for n in ("n_prompts", "a", "b", "seed", "progress", "K", "filter"))
    js = (LAB / "static" / "export_page.js").read_text()
    assert '"--n-prompts' not in js and '"--K' not in js  # the page reads state.flags
    line = command_line(spec, "decay.html").split()
    assert line[line.index(cli_flag("n_prompts")) + 1] == str(spec.n_prompts)
    assert line[line.index(cli_flag("K")) + 1] == str(spec.K)
