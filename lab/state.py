"""The lab's state: one ``param.Parameterized`` per view, testable without a browser.

* :class:`LabState`       the live lab's controls; synced to the URL query string under the names
                          in :data:`URL_PARAMS`. Its defaults are exactly ``sims.scenario.Scenario()``
                          (plus the filter band used when the filter is switched on).
* :class:`PlayState`      play / pause of the training-progress animation.
* :class:`AdvantageState` the advantage explorer (G, number correct or a typed reward vector).

:func:`sanitize` turns raw URL query values into valid ones: a value out of range is
clamped, one that is not a value of the right kind is replaced by the default, and each
correction is described in a notice the page shows. The page never fails to render.

Nothing here is module-level mutable state; the app builds one of each per session.
"""

from __future__ import annotations

import math
import random
from typing import Mapping

import numpy as np
import param

from grpo_lab.sims import advantages as adv
from grpo_lab.sims import reward_text
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.loop_stall import LOOPS
from grpo_lab.sims.scenario import Scenario

from .grid.pin import parse_pin, pin_text
from .grid.spec import K_MAX, LINKED, RHO_MAX, GridControls, ordered_band

__all__ = ["LabState", "PlayState", "AdvantageState", "POPULATION", "LOOP", "NO_LOOP", "URL_PARAMS", "LAB_MAX_PROMPTS",
           "RHO_MAX", "sanitize", "query_values"]

LAB_MAX_PROMPTS = 20_000  #: the most prompts the lab draws (each ships 64 float32 uniforms to the browser)
BETA_BOUNDS = (0.05, 100.0)  #: allowed range of the Beta parameters a and b
SEED_MAX = 2**32 - 1

NO_LOOP = "none"  #: the stall overlay's "no loop"
#: the stall overlay's controls (LabState's own; in the URL only while a loop is chosen)
LOOP = ("loop", "gen_batch", "train_batch", "cap")
#: the controls that decide the population (LabState's own; the grid's are grid.spec.LINKED)
POPULATION = ("n_prompts", "a", "b", "seed")
#: URL query parameter names, in order: every control of LabState (the grid's, the population's, the pin, the stall
#: overlay's loop), which the page also watches for its redraw; ``pin`` only while a view is pinned, the loop's only
#: while a loop is chosen
URL_PARAMS = LINKED + POPULATION + ("pin",) + LOOP

_DEFAULT = Scenario()


class LabState(GridControls):
    """The live lab's controls: the grid's (:class:`grpo_lab.grid.spec.GridControls`: progress, K, the
    filter and its band, rho) and the population's. ``scenario()`` is the view they describe."""

    n_prompts = param.Integer(_DEFAULT.n_prompts, bounds=(1, LAB_MAX_PROMPTS), label="Prompts", doc=(
        "Number of prompts in the population (one cell each)."))
    a = param.Number(_DEFAULT.a, bounds=BETA_BOUNDS, label="Beta a", doc="Beta(a, b) difficulty distribution: a.")
    b = param.Number(_DEFAULT.b, bounds=BETA_BOUNDS, label="Beta b", doc="Beta(a, b) difficulty distribution: b.")
    seed = param.Integer(_DEFAULT.seed, bounds=(0, SEED_MAX), label="Seed", doc=(
        "Seed of the population draw: the same seed gives the same prompts and the same groups."))
    pin = param.String("", doc=(
        "The pinned view's controls (grpo_lab.grid.pin: e.g. K8_t0.68), shown as a ghost beside the grid and "
        "compared with the live view; empty: nothing pinned."))
    notice = param.String("", doc="Corrections made to the URL's values, shown on the page.")
    # the trainer loop whose stall the decay curve shows (grpo_lab.sims.loop_stall); in the URL while one is chosen
    loop = param.Selector(objects=[NO_LOOP, *LOOPS], default=NO_LOOP, label="Trainer loop", doc=(
        "Draw on the decay curve when this loop would stall as training progresses: DAPO (dynamic sampling: rounds "
        "of the generation batch until the train batch of mixed groups is full, at most the cap) or plain GRPO (a "
        "step whose every group is unanimous trains on nothing)."))
    gen_batch = param.Integer(512, bounds=(1, 100_000), label="Prompts a round", doc=(
        "DAPO: prompts drawn per generation round (verl data.gen_batch_size)."))
    train_batch = param.Integer(512, bounds=(1, 100_000), label="Groups a step", doc=(
        "Groups a step trains on (verl data.train_batch_size; for GRPO the step's batch)."))
    cap = param.Integer(2, bounds=(1, 1_000), label="Rounds cap", doc=(
        "DAPO: most generation rounds a step may take (verl algorithm.filter_groups.max_num_gen_batches)."))

    def loop_settings(self) -> tuple | None:
        """``(loop, gen_batch, train_batch, cap)`` of the stall overlay, or None when no loop is chosen."""
        return None if self.loop == NO_LOOP else (self.loop, self.gen_batch, self.train_batch, self.cap)

    def scenario(self) -> Scenario:
        """The view these controls describe (band only when the filter is on; lo <= hi enforced)."""
        lo, hi = self.band()
        return Scenario(n_prompts=self.n_prompts, a=self.a, b=self.b, seed=self.seed, progress=self.progress,
                        K=self.K, rho=self.rho, band=(lo, hi) if self.filter else None, gain=_DEFAULT.gain)

    def population_key(self) -> tuple:
        """What determines the population: the :data:`POPULATION` values (n_prompts, a, b, seed)."""
        return tuple(getattr(self, name) for name in POPULATION)

    def values(self) -> dict:
        """The URL parameters' current values (the stall overlay's loop and sizes only while a loop is chosen)."""
        return {name: getattr(self, name) for name in URL_PARAMS if name not in LOOP or self.loop != NO_LOOP}

    def reset(self) -> None:
        """Back to the defaults (``Scenario()``, no trainer loop); clears the notice."""
        self.param.update(**{name: self.param[name].default for name in URL_PARAMS}, notice="")

    def new_draw(self, rng: random.Random | None = None) -> int:
        """Draw a fresh population: a new random seed (different from the current one). Returns it."""
        rng = rng or random.SystemRandom()
        seed = self.seed
        while seed == self.seed:
            seed = rng.randrange(0, 2**31)
        self.seed = seed
        return seed

    def step(self, dt: float = 0.05) -> float:
        """Advance progress by dt, stopping at 1. Returns the new progress."""
        self.progress = min(1.0, round(self.progress + dt, 10))
        return self.progress


class PlayState(param.Parameterized):
    """Play / pause of the progress animation, which runs in the browser (the grid view's play loop)."""

    playing = param.Boolean(False, doc="Animate training progress from its current value to 1.")


#: where the advantage explorer's rewards come from: value -> what the page calls it
REWARD_SOURCES = {"binary": "K pass / fail rollouts (the sliders)", "typed": "the typed reward vector"}


MAX_TYPED_REWARDS = 1024  #: the most rewards the advantage explorer takes typed


def parse_rewards(text: str) -> np.ndarray:
    """A typed reward vector, parsed by the core (:func:`grpo_lab.sims.reward_text.parse_rewards`: numbers separated
    by commas, semicolons or spaces; at most :data:`MAX_TYPED_REWARDS`). Raises InputError saying, in the page's
    words, what is wrong (the first word that is not a number, no number at all, too many, or NaN / inf)."""
    try:
        return reward_text.parse_rewards(text, MAX_TYPED_REWARDS)
    except reward_text.RewardTextError as exc:
        raise InputError(_page_words(exc)) from None


def _page_words(exc) -> str:
    if exc.kind == "not_a_number":
        shown = exc.word if len(exc.word) <= 20 else exc.word[:20] + "\u2026"
        return f"\u201c{shown}\u201d is not a number; type rewards separated by commas, e.g. 1, 0, 0.5"
    return {"empty": "no number typed; type rewards separated by commas, e.g. 1, 0, 0.5",
            "too_many": f"{exc.count:,} rewards typed; at most {MAX_TYPED_REWARDS:,}",
            "not_finite": "every reward must be a finite number (not NaN or infinity)"}.get(exc.kind, str(exc))


class AdvantageState(param.Parameterized):
    """The advantage explorer: a group of K binary rollouts with ``correct`` successes, or typed rewards.

    ``source`` says which of the two the table uses ("binary" or "typed"); typing a reward vector
    switches it to "typed" and clearing the text back to "binary", and the page shows it, so typed
    rewards never replace the sliders unannounced. (The group size is the parameter ``G``, shown as K.)
    """

    G = param.Integer(8, bounds=(1, K_MAX), label="Group size K", doc="Group size K: rollouts in the group.")
    correct = param.Integer(1, bounds=(0, K_MAX), doc="Number of correct rollouts in the group (binary rewards).")
    rewards_text = param.String("", doc=(
        "A reward vector, e.g. 1, 0, 0, 0.5 (used instead of the sliders while 'Rewards from' says so)."))
    source = param.Selector(default="binary", objects=list(REWARD_SOURCES), doc="Which rewards the table uses.")
    error = param.String("", doc="Why the typed rewards were not used.")

    @param.depends("rewards_text", watch=True)
    def _follow_text(self) -> None:
        self.source = "typed" if self.rewards_text.strip() else "binary"

    @param.depends("rewards_text", "source", watch=True)
    def _typed_sets_K(self) -> None:
        """While typed rewards are used, the sliders' K is their count (K_MAX for more), so the sliders and the plots
        say the group the table shows; going back to the sliders gives them back their own K and correct count.
        Applied at once, or through ``defer`` where a page sets one (a served page: after the change that caused
        it has been sent, as a change of K made within it left the browser's radio buttons behind)."""
        if self.defer is not None and self.source == "typed":  # the sliders' own K comes back at once
            self.defer(self._follow_typed)
        else:
            self._follow_typed()

    def _follow_typed(self) -> None:
        r = self._typed()[0] if self.source == "typed" else None
        if r is not None:
            if self._sliders is None:
                self._sliders = (self.G, self.correct)
            self.G = int(min(r.size, K_MAX))
        elif self._sliders is not None:  # back to the sliders, or the typed text no longer parses
            (G, correct), self._sliders = self._sliders, None
            self.param.update(G=G, correct=min(correct, G))

    def __init__(self, **params):
        super().__init__(**params)
        self._sliders = None  #: (G, correct) of the sliders while typed rewards set K
        self.defer = None  #: None, or a function that runs a function later (a served page's next tick)

    def _typed(self) -> tuple[np.ndarray | None, str]:
        """The typed rewards and "" , or None and why they cannot be used (in words)."""
        try:
            return parse_rewards(self.rewards_text), ""
        except InputError as exc:
            return None, f"Rewards not used: {exc}"

    def rewards(self) -> np.ndarray:
        """The group's rewards: the typed vector when ``source`` is "typed" and it parses, else ``correct`` ones
        then zeros (``error`` says why typed rewards were not used)."""
        if self.source == "typed" and self.rewards_text.strip():
            r, self.error = self._typed()
            if r is not None:
                return r
        else:
            self.error = ""
        c = min(self.correct, self.G)
        return (np.arange(self.G) < c).astype(float)

    def table(self) -> dict:
        """Advantages per estimator for the current rewards, and max |A| of each."""
        r = self.rewards()
        rows = {name: adv.advantages(r, name) for name in adv.ESTIMATORS}
        return {"rewards": r, "advantages": rows, "max_abs": {n: adv.max_abs_advantage(a) for n, a in rows.items()}}


# --- URL values ---------------------------------------------------------------------------

def _default(name):
    return LabState.param[name].default


def _as_float(raw) -> float | None:
    try:
        v = float(str(raw).strip())
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _as_bool(raw) -> bool | None:
    s = str(raw).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off"):
        return False
    return None


#: a URL value quoted in a notice is cut to this many characters (the notice is plain text: lab.notice)
NOTICE_VALUE_CHARS = 60


def _quoted(raw) -> str:
    """A raw URL value as a notice quotes it: cut to NOTICE_VALUE_CHARS (with an ellipsis), never interpreted."""
    text = str(raw)
    return text if len(text) <= NOTICE_VALUE_CHARS else text[:NOTICE_VALUE_CHARS - 1] + "\u2026"


def _clean(name: str, raw) -> tuple[object, str | None]:
    """A valid value for ``name`` from a raw URL string, and a notice when it had to be changed.

    The notice quotes the raw value (shortened by :func:`_quoted`); it is text a visitor typed or a link
    carried, so the page shows notices as plain text (:class:`grpo_lab.notice.TextNotice`), never as
    Markdown or HTML.
    """
    if name == "pin":
        return _clean_pin(raw)
    p = LabState.param[name]
    default = _default(name)
    shown = _quoted(raw)
    if isinstance(p, param.Selector):
        v = str(raw).strip()
        if v not in p.objects:
            return default, f"{name}={shown} is not one of {', '.join(p.objects)}; using {default}"
        return v, None
    if isinstance(p, param.Boolean):
        v = _as_bool(raw)
        if v is None:
            return default, f"{name}={shown} is not true/false; using {str(default).lower()}"
        return v, None
    v = _as_float(raw)
    if v is None:
        return default, f"{name}={shown} is not a number; using the default {default}"
    lo, hi = p.bounds
    note = None
    if isinstance(p, param.Integer):
        if v != round(v):
            note = f"{name}={shown} is not a whole number; rounded"
        v = int(round(v)) if abs(v) < 1e18 else (hi if v > 0 else lo)
    if v < lo or v > hi:
        clamped = min(max(v, lo), hi)
        note = f"{name}={shown} is outside [{lo}, {hi}]; clamped to {clamped}"
        v = clamped
    return (int(v) if isinstance(p, param.Integer) else float(v)), note


def _clean_pin(raw) -> tuple[str, str | None]:
    """A clean ``pin`` (:mod:`grpo_lab.grid.pin`) from a raw URL value: each field cleaned as its control's
    URL value is (clamped, rounded), the band put in order; one that is not a pin is dropped with a notice."""
    text = str(raw).strip()
    if not text:
        return "", None
    try:
        fields = parse_pin(text)
    except ValueError:
        return "", f"pin={_quoted(raw)} is not a pinned view (like K8_t0.5); nothing is pinned"
    values, notes = {"filter": "band_lo" in fields, "band_lo": 0.0, "band_hi": 1.0, "rho": 0.0}, []
    for name, value in fields.items():
        values[name], note = _clean(name, value)
        if note:
            notes.append(note)
    return pin_text(values), ("in pin=" + _quoted(raw) + ": " + "; ".join(notes)) if notes else None


def sanitize(query: Mapping[str, object]) -> tuple[dict, list[str]]:
    """Valid LabState values from raw URL query values (strings, bytes or lists of them).

    Returns ``(values, notices)``: only the parameters present in ``query`` appear in
    ``values``; unknown names are ignored. A band with lo > hi is swapped.
    """
    values, notices = {}, []
    for name in URL_PARAMS:
        if name not in query:
            continue
        raw = query[name]
        if isinstance(raw, (list, tuple)):
            raw = raw[-1] if raw else ""
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", "replace")
        value, note = _clean(name, raw)
        values[name] = value
        if note:
            notices.append(note)
    lo = values.get("band_lo", _default("band_lo"))
    hi = values.get("band_hi", _default("band_hi"))
    if (lo, hi) != ordered_band(lo, hi):
        values["band_lo"], values["band_hi"] = ordered_band(lo, hi)
        notices.append(f"band_lo > band_hi; swapped to [{hi}, {lo}]")
    return values, notices


def query_values(state: LabState) -> dict[str, str]:
    """The URL query of a state, as strings (booleans as true/false; ``pin`` only while a view is pinned, the
    stall overlay's loop and its sizes only while a loop is chosen)."""
    out = {}
    for name, v in state.values().items():
        if name == "pin" and not v:
            continue
        out[name] = str(v).lower() if isinstance(v, bool) else repr(v) if isinstance(v, float) else str(v)
    return out
