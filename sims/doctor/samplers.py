"""The doctor's "Samplers" section: :func:`grpo_lab.sims.samplers.compare` on the run's fitted population.

The population is the preferred fit (single Beta or two-component mixture, as the what-ifs use) as
mid-quantile pass rates, one per prompt the run drew (at most :data:`MAX_PROMPTS`); the expiry threshold is
the forecast's. **Sizes**: with dynamic-sampling settings (:func:`.trainer_config.step_settings`: a
``--trainer-config`` and/or the flags, else the record's own grpo-lab dynamic-sampling config; the very dict the
stall forecast gets) the DAPO row uses their ``train_batch`` (batch), ``gen_batch``, ``cap``
(max_num_gen_batches, 0 = none) and ``scheme`` (the trainer's loop, :mod:`.cost`) and every row their K; without, batch = generation batch = the run's groups per
step, the cap :data:`~grpo_lab.sims.samplers.DEFAULTS`' ``max_num_gen_batches`` and the record's K
(``settings.sizes_from`` says which). A finite pool drawn without replacement (``pool``) is not modelled here
(the samplers draw prompts independently; the stall forecast models it).
The decay model's t = 1 is taken as the run's last step, so ``expiry_shift_steps`` = shift x steps
(a convention of the comparison, not a fit of the run's own drift: the forecast section has that).

**Intervals** (:mod:`.sampler_intervals`): with the cluster bootstrap's resamples the comparison is re-run on
bootstrap populations and each row gets ``interval`` ({figure: [lo, hi]}); ``settings.intervals`` says how.
Simulated rows carry ``mc_se`` (:func:`~grpo_lab.sims.samplers.compare`: Monte Carlo standard errors).
Numbers only: :mod:`grpo_lab.doctor_report.samplers` formats the section.
"""

from __future__ import annotations

from . import sampler_intervals as si

__all__ = ["samplers_section", "sizes", "MAX_PROMPTS"]

MAX_PROMPTS = 20_000  #: the most prompts the comparison stands for a run's fitted population with
MIN_REPS = 2  #: the simulated samplers average at least this many runs here (a Monte Carlo SE needs two)


def sizes(settings: dict | None, K: int, groups_per_step: int) -> dict:
    """The comparison's K and DAPO sizes from :func:`.trainer_config.step_settings`' dict (module docstring)."""
    from ..samplers import DEFAULTS

    if settings is None:
        return {"K": int(K), "batch": int(groups_per_step), "gen_batch": int(groups_per_step),
                "max_num_gen_batches": int(DEFAULTS["max_num_gen_batches"]), "scheme": "rounds", "inflight": 1,
                "sizes_from": "the run's groups per step (no trainer config)"}
    return {"K": int(settings["K"]), "batch": int(settings["train_batch"]), "gen_batch": int(settings["gen_batch"]),
            "max_num_gen_batches": int(settings["cap"]), "scheme": settings.get("scheme", "rounds"),
            "inflight": int(settings.get("inflight") or 1),
            "sizes_from": "flags" if settings.get("trainer") == "flags" else
            f"{settings.get('trainer')} config ({settings.get('source', 'flags')})"}


def _population_list(population) -> list:
    if len(population) == 2 and isinstance(population[0], (int, float)):
        return [[1.0, float(population[0]), float(population[1])]]
    return [list(c) for c in population]


def samplers_section(population, K: int, prompts: int, steps: int, batch: int, threshold: float,
                     settings: dict | None = None, resamples: dict | None = None) -> dict:
    """``compare`` on the fitted population (see the module docstring); adds ``population``.

    ``settings``: :func:`.trainer_config.step_settings`' dict or None; ``batch``: the run's groups per step (the
    DAPO sizes without settings); ``resamples``: :func:`.honesty.bootstrap_resamples`' result (intervals), or None.
    """
    from ..samplers import beta_pass_rates, compare  # here: grpo_lab.sims.samplers imports .skip of this package
    from ..samplers.compare import auto_reps

    sz = sizes(settings, K, batch)
    n = max(1, min(int(prompts), MAX_PROMPTS))
    opts = dict(steps=int(steps), threshold=threshold, batch=sz["batch"], gen_batch=sz["gen_batch"],
                max_num_gen_batches=sz["max_num_gen_batches"], scheme=sz["scheme"], inflight=sz["inflight"])
    out = compare(beta_pass_rates(population, n), sz["K"], 0.0, reps=max(MIN_REPS, auto_reps(n)), **opts)
    out["settings"]["sizes_from"] = sz["sizes_from"]
    out["population"] = _population_list(population)
    if resamples is None:
        out["settings"]["intervals"] = None
        return out
    model = "beta" if len(out["population"]) == 1 else "mixture"
    pops, used = si.bootstrap_populations(model, population, resamples, K)  # cells at the record's K
    m = min(n, si.PROMPTS)
    boot = [compare(beta_pass_rates(p, m), sz["K"], 0.0, **opts)["rows"] for p in pops]
    centre = compare(beta_pass_rates(population, m), sz["K"], 0.0, **opts)["rows"] if m < n else None
    si.row_intervals(out["rows"], boot, int(resamples["prompts"]), centre)
    out["settings"]["intervals"] = {
        "level": si.LEVEL, "populations": used, "prompts_each": m, "model": model,
        "method": f"the comparison re-run on {used} cluster-bootstrap populations of the {model} fit"
                  + (" (each refitted by Newton from the full fit)" if model == "mixture" else "")
                  + "; the hull of the normal interval from their spread and their percentile interval"}
    return out
