"""``grpo-lab export``: the lab's grid as one self-contained, interactive HTML file for a blog post.

The page needs no server and no network, and no BokehJS: it is plain HTML (native
range inputs, a <canvas>, the lab's readout table) plus, inline:

* the lab's grid view: the browser kernel ``lab/static/kernel.js`` (the project's only
  browser-side arithmetic, proven equal to :func:`sims.scenario.evaluate` by
  ``tests/test_kernel_parity.py``), the cell painter ``lab/static/cells.js`` and the view
  ``lab/static/gridview.js``, with the page glue ``lab/static/export_page.js`` (play, new
  draw, provenance); ``lab/export_page.py`` writes the HTML;
* a few pre-drawn populations (seeds S, S+1, ...), each packed by
  :func:`lab.kernel.kernel_data_b64` from :func:`sims.population.draw_population`,
  because a browser cannot re-run numpy's Beta sampler. "New draw" cycles
  through them and the page says which seed is shown.

Options are checked by the lab URL's own sanitiser (:func:`grpo_lab.state.sanitize`, whose bounds are
the grid's control spec, :mod:`grpo_lab.grid.spec`), made strict: where the URL would clamp with a
notice, the export stops with that notice. Files are written atomically by the core's writer
(:func:`grpo_lab.sims.record.atomic_write_bytes`), so an interrupted or failed export never leaves a
partial file.
"""

from __future__ import annotations

import math
import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from grpo_lab.sims import __version__
from grpo_lab.sims.decay import DEFAULT_GAIN
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.population import Population, draw_population
from grpo_lab.sims.record import atomic_write_bytes
from grpo_lab.sims.scenario import Scenario, evaluate

from .embed import MAX_CAPTION_CHARS, caption_text, page_settings
from .export_page import page_html, script_json
from .grid.markup import grid_data
from .grid.spec import BAND_STEP, DEFAULT_BAND, EXPORT_PROGRESS_STEP, PLAY_SECONDS, VIEW_OPTIONS, cli_flag, step_digits
from .state import sanitize

SIZE_BUDGET = 2_500_000  #: bytes; "auto" draws embed as many populations as fit under this
MAX_DRAWS = 8  #: the most populations one file may embed
AUTO_MAX_DRAWS = 5  #: the most populations "auto" embeds
MAX_EXPORT_PROMPTS = 10_000  #: a page is for reading on a phone; 10,000 cells is plenty
DEFAULT_OUT = "decay.html"


@dataclass(frozen=True)
class ExportSpec:
    """What one exported page shows at load, and how many populations it embeds.

    ``scenario`` is the starting view (population, progress, K, gain; its ``band`` is None when the
    filter starts off, else the band). ``band`` is the band the filter control starts with either way.
    ``draws`` is the number of embedded populations (seeds ``seed .. seed + draws - 1``), or None
    for as many as fit in :data:`SIZE_BUDGET` (at least 1, at most :data:`AUTO_MAX_DRAWS`).
    ``show_title``, ``show_footer`` and ``caption`` are the embed options (:mod:`grpo_lab.embed`); the page's
    URL can hide the title and footer and set the caption too (``?title=false&footer=false&caption=...``).
    The scenario's fields read through: ``spec.K`` is ``spec.scenario.K``.
    """

    scenario: Scenario = Scenario()
    band: tuple[float, float] = DEFAULT_BAND
    draws: int | None = None
    title: str = "Watching an environment expire"
    show_title: bool = True  #: the heading and its introduction (``--no-title`` leaves them out)
    show_footer: bool = True  #: the provenance footer (``--no-footer`` leaves it out)
    caption: str = ""  #: a line of plain text above the grid (``--caption``), shown escaped

    def __getattr__(self, name):  # n_prompts, a, b, seed, progress, K, gain
        if name.startswith("__") or name == "scenario":
            raise AttributeError(name)
        return getattr(self.scenario, name)

    @property
    def filter_on(self) -> bool:
        return self.scenario.band is not None


def make_spec(*, filter_band=None, band=None, draws=None, title=None, no_title=False, no_footer=False, caption=None,
              **scenario) -> ExportSpec:
    """An ExportSpec from the command line's options: ``filter_band`` turns the filter on with that band."""
    if filter_band is not None and band is not None:
        raise InputError("give either --filter LO HI (filter on) or --band LO HI (filter off), not both")
    chosen = filter_band if filter_band is not None else band
    fields = {"scenario": Scenario(**scenario, band=tuple(filter_band) if filter_band is not None else None),
              "draws": draws, "show_title": not no_title, "show_footer": not no_footer}
    if chosen is not None:
        fields["band"] = tuple(chosen)
    if title is not None:
        fields["title"] = title
    if caption is not None:
        fields["caption"] = caption
    return ExportSpec(**fields)


#: the command line's name for each option the URL sanitiser checks
_FLAGS = {**{name: cli_flag(name) for name in (*VIEW_OPTIONS, "rho")},
          "band_lo": "--filter / --band (low end)", "band_hi": "--filter / --band (high end)"}


def _sanitised(sc: Scenario, band) -> dict:
    """The options through :func:`grpo_lab.state.sanitize`; its first notice, if any, as InputError."""
    try:
        lo, hi = band
    except (TypeError, ValueError):
        raise InputError(f"--filter / --band needs two numbers LO HI, got {band!r}") from None
    raw = {"n_prompts": sc.n_prompts, "a": sc.a, "b": sc.b, "seed": sc.seed, "progress": sc.progress, "K": sc.K,
           "rho": sc.rho, "band_lo": lo, "band_hi": hi}
    values, notices = sanitize({k: "nan" if isinstance(v, bool) else str(v) for k, v in raw.items()})
    if notices:
        name = next((n for n in _FLAGS if notices[0].startswith(f"{n}=")), None)
        what = notices[0].split("; ")[0]
        raise InputError(f"{_FLAGS[name]}: {what}" if name else f"--filter / --band: {what} (give LO <= HI)")
    return values


def validate(spec: ExportSpec) -> ExportSpec:
    """Check every field; raise :class:`~sims.errors.InputError` with one clear line, or return a clean spec.

    The lab URL's sanitiser checks the values the lab shares (bounds from the grid's spec); an export
    adds: at most :data:`MAX_EXPORT_PROMPTS` prompts, rho = 0 (the browser kernel's case), progress and
    band on their sliders' steps, the number of draws and the gain.
    """
    sc = spec.scenario
    v = _sanitised(sc, spec.band)
    if sc.band is not None:
        _sanitised(sc, sc.band)
        if tuple(map(float, sc.band)) != (v["band_lo"], v["band_hi"]):
            raise InputError("the filter's band and the starting band differ")
    n, t, lo, hi = v["n_prompts"], v["progress"], v["band_lo"], v["band_hi"]
    if n > MAX_EXPORT_PROMPTS:
        raise InputError(f"--n-prompts must be at most {MAX_EXPORT_PROMPTS:,} for an exported page, got {n:,}")
    pd, bd = step_digits(EXPORT_PROGRESS_STEP), step_digits(BAND_STEP)
    if round(t, pd) != t:
        raise InputError(f"--progress must have at most {_WORDS[pd]} decimals (the page's slider step is "
                         f"{EXPORT_PROGRESS_STEP:g}), got {t!r}")
    if round(lo, bd) != lo or round(hi, bd) != hi:
        raise InputError(f"--filter / --band ends must have at most {_WORDS[bd]} decimals (the page's slider step "
                         f"is {BAND_STEP:g}), got {lo!r} {hi!r}")
    if v["rho"] != 0:
        raise InputError("an exported page shows independent rollouts only (rho = 0)")
    draws = spec.draws
    if draws is not None and not (isinstance(draws, int) and 1 <= draws <= MAX_DRAWS):
        raise InputError(f"--draws must be an integer from 1 to {MAX_DRAWS}, got {draws!r}")
    if not (math.isfinite(sc.gain) and sc.gain >= 0):
        raise InputError(f"--gain must be a finite number >= 0, got {sc.gain!r}")
    caption, title = caption_text(spec.caption), caption_text(spec.title)
    if len(caption) > MAX_CAPTION_CHARS:
        raise InputError(f"--caption must be at most {MAX_CAPTION_CHARS} characters, got {len(caption):,}")
    if not 1 <= len(title) <= MAX_CAPTION_CHARS:
        raise InputError(f"--title must be 1 to {MAX_CAPTION_CHARS} characters of text, got {len(title):,}")
    scenario = replace(sc, n_prompts=n, K=v["K"], progress=t, a=v["a"], b=v["b"], seed=v["seed"], rho=0.0,
                       band=(lo, hi) if sc.band is not None else None)
    return replace(spec, scenario=scenario, band=(lo, hi), draws=draws, caption=caption, title=title)


_WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}


def command_line(spec: ExportSpec, out: str | os.PathLike = DEFAULT_OUT) -> str:
    """The ``grpo-lab export`` command line that reproduces ``spec`` exactly."""
    f = cli_flag
    args = ["grpo-lab", "export", "--out", str(out), f("n_prompts"), str(spec.n_prompts), f("a"), f"{spec.a:g}",
            f("b"), f"{spec.b:g}", f("seed"), str(spec.seed), f("K"), str(spec.K), f("progress"), repr(spec.progress)]
    if spec.filter_on:
        args += ["--filter", repr(spec.band[0]), repr(spec.band[1])]
    elif spec.band != DEFAULT_BAND:
        args += ["--band", repr(spec.band[0]), repr(spec.band[1])]
    if spec.draws is not None:
        args += ["--draws", str(spec.draws)]
    if spec.gain != DEFAULT_GAIN:
        args += ["--gain", repr(spec.gain)]
    if spec.title != ExportSpec.title:
        args += ["--title", spec.title]
    args += [flag for flag, on in (("--no-title", not spec.show_title), ("--no-footer", not spec.show_footer)) if on]
    if spec.caption:
        args += ["--caption", spec.caption]
    return " ".join(shlex.quote(a) for a in args)


def embedded_draw(population: Population, gain: float) -> dict:
    """One population as the page embeds it: its seed and its packing for the grid view."""
    return {"seed": population.seed, **grid_data(population, gain)}


def page_state(spec: ExportSpec, draws: list[dict], out_name: str) -> dict:
    """Everything the page glue reads at load (JSON): the population, embedded draws, provenance.

    The starting controls are the inputs' own values in the page's HTML.
    """
    return {
        "population": {"n_prompts": spec.n_prompts, "a": spec.a, "b": spec.b, "gain": spec.gain},
        "draws": draws,
        "version": __version__,
        "command": command_line(spec, out_name),
        "embed": page_settings(),
        "play_seconds": PLAY_SECONDS,  # Play's whole sweep, as in the lab
        "options": list(VIEW_OPTIONS),  # the view command's options, in order (grpo_lab.grid.spec.VIEW_OPTIONS)
        "flags": {name: cli_flag(name) for name in (*VIEW_OPTIONS, "filter")},
    }


def _population(spec: ExportSpec, seed: int) -> Population:
    return draw_population(spec.n_prompts, spec.a, spec.b, seed)


def render_page(spec: ExportSpec, out_name: str = DEFAULT_OUT) -> tuple[str, list[int]]:
    """The page's full HTML text for a spec (choosing the number of draws if it is None), and the seeds
    it embeds. Each population is drawn once: the first serves the starting view's readouts too."""
    spec = validate(spec)
    first = _population(spec, spec.seed)
    summary = evaluate(spec.scenario, first).summary
    draws = [embedded_draw(first, spec.gain)]
    if spec.draws is None:
        base = len(_render(spec, draws, summary, out_name).encode())
        per_draw = len(script_json(draws[0])) + 1
        fit = (SIZE_BUDGET - base) // per_draw + 1
        count = max(1, min(AUTO_MAX_DRAWS, int(fit)))
    else:
        count = spec.draws
    draws += [embedded_draw(_population(spec, spec.seed + i), spec.gain) for i in range(1, count)]
    return _render(spec, draws, summary, out_name), [d["seed"] for d in draws]


def render(spec: ExportSpec, out_name: str = DEFAULT_OUT) -> str:
    """The page's full HTML text (see :func:`render_page`)."""
    return render_page(spec, out_name)[0]


def _render(spec: ExportSpec, draws: list[dict], summary: dict, out_name: str) -> str:
    return page_html(spec, page_state(spec, draws, out_name), summary)


def check_target(path: str | os.PathLike) -> Path:
    """The output path, if a file can be created there; else InputError with one line."""
    target = Path(path)
    if str(path) == "" or target.name in ("", ".", ".."):
        raise InputError(f"--out needs a file name such as {DEFAULT_OUT}, got {str(path)!r}")
    if target.is_dir():
        raise InputError(f"--out {str(path)!r} is a directory; give a file name such as {DEFAULT_OUT}")
    directory = target.parent
    if not directory.is_dir():
        why = "is not a directory" if directory.exists() else "does not exist"
        raise InputError(f"cannot write {str(path)!r}: {str(directory)!r} {why}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {str(path)!r}: directory {str(directory)!r} is not writable")
    return target


def write_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` with the core's atomic writer (temporary file + :func:`os.replace`), with the
    user's umask (0o644 under the usual 022), as any file the user writes.

    Raises InputError (one line) when the directory is missing or not writable; on any failure,
    KeyboardInterrupt included, the target is either the old file (or absent) or the complete new one.
    """
    target = check_target(path)
    try:
        atomic_write_bytes(target, text.encode("utf-8"))
    except OSError as exc:
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    return target


def export(spec: ExportSpec, out: str | os.PathLike = DEFAULT_OUT) -> dict:
    """Validate, render and write the page; return ``{"path", "bytes", "draws", "seeds"}``."""
    spec = validate(spec)
    check_target(out)  # fail before the (slower) rendering
    text, seeds = render_page(spec, Path(out).name)
    path = write_atomic(out, text)
    return {"path": str(path), "bytes": len(text.encode()), "draws": len(seeds), "seeds": seeds}
