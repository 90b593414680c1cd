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

Files are written atomically (a temporary file in the target directory, then
:func:`os.replace`), so an interrupted or failed export never leaves a partial file.
"""

from __future__ import annotations

import html
import json
import math
import os
import shlex
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from grpo_lab.sims import __version__
from grpo_lab.sims._checks import as_group_size, band as check_band, positive
from grpo_lab.sims.decay import DEFAULT_GAIN, _progress
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.population import draw_population
from grpo_lab.sims.scenario import Scenario

STATIC = Path(__file__).with_name("static")
SIZE_BUDGET = 2_500_000  #: bytes; "auto" draws embed as many populations as fit under this
MAX_DRAWS = 8  #: the most populations one file may embed
AUTO_MAX_DRAWS = 5  #: the most populations "auto" embeds
MAX_EXPORT_PROMPTS = 10_000  #: a page is for reading on a phone; 10,000 cells is plenty
DEFAULT_BAND = (0.2, 0.8)  #: the filter band of seed 002's lab (88.5% useful, 8.7% kept at t = 1)
DEFAULT_OUT = "decay.html"


@dataclass(frozen=True)
class ExportSpec:
    """What one exported page shows at load, and how many populations it embeds.

    ``scenario`` is the starting view (population, progress, K, gain; its ``band`` is None when the
    filter starts off, else the band). ``band`` is the band the filter control starts with either way.
    ``draws`` is the number of embedded populations (seeds ``seed .. seed + draws - 1``), or None
    for as many as fit in :data:`SIZE_BUDGET` (at least 1, at most :data:`AUTO_MAX_DRAWS`).
    The scenario's fields read through: ``spec.K`` is ``spec.scenario.K``.
    """

    scenario: Scenario = Scenario()
    band: tuple[float, float] = DEFAULT_BAND
    draws: int | None = None
    title: str = "Watching an environment expire"

    def __getattr__(self, name):  # n_prompts, a, b, seed, progress, K, gain
        if name.startswith("__") or name == "scenario":
            raise AttributeError(name)
        return getattr(self.scenario, name)

    @property
    def filter_on(self) -> bool:
        return self.scenario.band is not None


def make_spec(*, filter_band=None, band=None, draws=None, title=None, **scenario) -> ExportSpec:
    """An ExportSpec from the command line's options: ``filter_band`` turns the filter on with that band."""
    if filter_band is not None and band is not None:
        raise InputError("give either --filter LO HI (filter on) or --band LO HI (filter off), not both")
    chosen = filter_band if filter_band is not None else band
    fields = {"scenario": Scenario(**scenario, band=tuple(filter_band) if filter_band is not None else None),
              "draws": draws}
    if chosen is not None:
        fields["band"] = tuple(chosen)
    if title is not None:
        fields["title"] = title
    return ExportSpec(**fields)


def validate(spec: ExportSpec) -> ExportSpec:
    """Check every field; raise :class:`~sims.errors.InputError` with one clear line, or return a clean spec."""
    from grpo_lab.kernel import K_MAX

    sc = spec.scenario
    n = int(as_group_size(sc.n_prompts, "--n-prompts"))
    if n > MAX_EXPORT_PROMPTS:
        raise InputError(f"--n-prompts must be at most {MAX_EXPORT_PROMPTS:,} for an exported page, got {n:,}")
    K = int(as_group_size(sc.K, "--K"))
    if K > K_MAX:
        raise InputError(f"--K must be at most {K_MAX}, got {K}")
    try:
        t = float(_progress(sc.progress))
    except InputError as exc:
        raise InputError(f"--progress: {exc}") from None
    if round(t, 3) != t:
        raise InputError(f"--progress must have at most three decimals (the page's slider step is 0.001), got {t!r}")
    lo, hi = _band(spec.band)
    if round(lo, 2) != lo or round(hi, 2) != hi:
        raise InputError(f"--filter / --band ends must have at most two decimals (the page's slider step is 0.01), "
                         f"got {lo!r} {hi!r}")
    if sc.band is not None and tuple(_band(sc.band)) != (lo, hi):
        raise InputError("the filter's band and the starting band differ")
    a, b = positive(sc.a, "--a"), positive(sc.b, "--b")
    if isinstance(sc.seed, bool) or not isinstance(sc.seed, int) or sc.seed < 0:
        raise InputError(f"--seed must be a non-negative integer, got {sc.seed!r}")
    if sc.rho != 0:
        raise InputError("an exported page shows independent rollouts only (rho = 0)")
    draws = spec.draws
    if draws is not None and not (isinstance(draws, int) and 1 <= draws <= MAX_DRAWS):
        raise InputError(f"--draws must be an integer from 1 to {MAX_DRAWS}, got {draws!r}")
    if not (math.isfinite(sc.gain) and sc.gain >= 0):
        raise InputError(f"--gain must be a finite number >= 0, got {sc.gain!r}")
    scenario = replace(sc, n_prompts=n, K=K, progress=t, a=a, b=b, band=(lo, hi) if sc.band is not None else None)
    return replace(spec, scenario=scenario, band=(lo, hi), draws=draws)


def _band(band) -> tuple[float, float]:
    try:
        lo, hi = band
    except (TypeError, ValueError):
        raise InputError(f"--filter needs two numbers LO HI, got {band!r}") from None
    try:
        return check_band(lo, hi)
    except InputError as exc:
        raise InputError(f"--filter: {exc}") from None


def command_line(spec: ExportSpec, out: str | os.PathLike = DEFAULT_OUT) -> str:
    """The ``grpo-lab export`` command line that reproduces ``spec`` exactly."""
    args = ["grpo-lab", "export", "--out", str(out), "--n-prompts", str(spec.n_prompts), "--a", f"{spec.a:g}",
            "--b", f"{spec.b:g}", "--seed", str(spec.seed), "--K", str(spec.K), "--progress", repr(spec.progress)]
    if spec.filter_on:
        args += ["--filter", repr(spec.band[0]), repr(spec.band[1])]
    elif spec.band != DEFAULT_BAND:
        args += ["--band", repr(spec.band[0]), repr(spec.band[1])]
    if spec.draws is not None:
        args += ["--draws", str(spec.draws)]
    if spec.gain != DEFAULT_GAIN:
        args += ["--gain", repr(spec.gain)]
    return " ".join(shlex.quote(a) for a in args)


def embedded_draw(spec: ExportSpec, seed: int) -> dict:
    """One population as the page embeds it: the core's draw for ``seed``, packed for the grid view."""
    from grpo_lab.grid_html import grid_data

    pop = draw_population(spec.n_prompts, spec.a, spec.b, seed)
    return {"seed": seed, **grid_data(pop, spec.gain)}


def page_state(spec: ExportSpec, draws: list[dict], out_name: str) -> dict:
    """Everything the page glue reads at load (JSON): the population, embedded draws, provenance.

    The starting controls are the inputs' own values in the page's HTML.
    """
    return {
        "population": {"n_prompts": spec.n_prompts, "a": spec.a, "b": spec.b, "gain": spec.gain},
        "draws": draws,
        "version": __version__,
        "command": command_line(spec, out_name),
    }


def _script_json(obj) -> str:
    """JSON safe to place inside a <script> element."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def render(spec: ExportSpec, out_name: str = DEFAULT_OUT) -> str:
    """The page's full HTML text for a validated spec (choosing the number of draws if it is None)."""
    spec = validate(spec)
    if spec.draws is None:
        one = embedded_draw(spec, spec.seed)
        base = len(_render(spec, [one], out_name).encode())
        per_draw = len(_script_json(one)) + 1
        fit = (SIZE_BUDGET - base) // per_draw + 1
        spec_draws = max(1, min(AUTO_MAX_DRAWS, int(fit)))
    else:
        spec_draws = spec.draws
    draws = [embedded_draw(spec, spec.seed + i) for i in range(spec_draws)]
    return _render(spec, draws, out_name)


def _render(spec: ExportSpec, draws: list[dict], out_name: str) -> str:
    from grpo_lab.export_page import page_html

    return page_html(spec, page_state(spec, draws, out_name))


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
    """Write ``text`` to ``path`` through a temporary file in the same directory and :func:`os.replace`.

    Raises InputError (one line) when the directory is missing or not writable; the
    temporary file is removed on any failure, including KeyboardInterrupt, so the
    target is either the old file (or absent) or the complete new one.
    """
    target = check_target(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise InputError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
        raise
    return target


def export(spec: ExportSpec, out: str | os.PathLike = DEFAULT_OUT) -> dict:
    """Validate, render and write the page; return ``{"path", "bytes", "draws", "seeds"}``."""
    spec = validate(spec)
    check_target(out)  # fail before the (slower) rendering
    text = render(spec, Path(out).name)
    path = write_atomic(out, text)
    seeds = [d["seed"] for d in _state_of(text)["draws"]]
    return {"path": str(path), "bytes": len(text.encode()), "draws": len(seeds), "seeds": seeds}


def _state_of(text: str) -> dict:
    """Read the embedded page state back from a rendered page (used by export() and the tests)."""
    from grpo_lab.export_page import STATE_ID

    start = text.index(f'id="{STATE_ID}">') + len(f'id="{STATE_ID}">')
    end = text.index("</script>", start)
    return json.loads(text[start:end])


def footer_text(spec: ExportSpec) -> str:
    """The static part of the provenance footer (the page fills in the seed on show)."""
    filt = f"filter {'on' if spec.filter_on else 'off'}, band [{spec.band[0]:g}, {spec.band[1]:g}]"
    return html.escape(f"{spec.n_prompts} prompts from Beta({spec.a:g}, {spec.b:g}), decay gain {spec.gain:g}; "
                       f"starting view t = {spec.progress:g}, K = {spec.K}, {filt}")
