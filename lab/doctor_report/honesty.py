r"""The fit's intervals (:mod:`grpo_lab.sims.doctor.honesty`) as one report line."""

from __future__ import annotations

from grpo_lab.sims.doctor.honesty import UNIDENTIFIED_RATIO

__all__ = ["intervals_text"]


def intervals_text(fit: dict) -> str:
    """One report line: the fit's 95% intervals, the cluster bootstrap's where prompts repeat."""
    c = fit.get("cluster")
    if not c:
        return ""
    (a0, a1), (b0, b1) = c["interval_alpha"], c["interval_beta"]
    vague = max(a1 / a0, b1 / b0) > UNIDENTIFIED_RATIO
    warn = (f"; the interval spans more than a factor {UNIDENTIFIED_RATIO:g}: the record identifies the mean pass rate, "
            "not the spread of the population") if vague else ""
    if c["repeated_prompts"]:
        return (f"  95% intervals (prompts repeat: {c['repeated_prompts']:,} of {c['prompts']:,} drawn more than once, "
                f"up to {c['max_draws']} times; cluster bootstrap over prompts): alpha [{a0:.3g}, {a1:.3g}] "
                f"(+/- {c['se_alpha']:.3g}), beta [{b0:.3g}, {b1:.3g}] (+/- {c['se_beta']:.3g})" + warn)
    return (f"  95% intervals (no prompt repeats; cluster bootstrap agrees with the Fisher SEs): alpha "
            f"[{a0:.3g}, {a1:.3g}], beta [{b0:.3g}, {b1:.3g}]" + warn)
