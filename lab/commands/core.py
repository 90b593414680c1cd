"""Core subcommands: ``table``, ``population``, ``advantages``, ``validate``."""

from __future__ import annotations

import argparse

import numpy as np

from grpo_lab.sims import advantages as adv
from grpo_lab.sims import montecarlo, outcomes, reward_text
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.scenario import Scenario, evaluate

from ._args import add_view_arguments
from ._io import column_format, print_json, print_table


def register(sub) -> None:
    p = sub.add_parser("table", help="group outcome probabilities for each (p, K)",
                       description="P(all pass), P(all fail), P(unanimous), P(useful) and rollouts per useful group.")
    p.add_argument("--K", type=int, nargs="+", default=[4, 8, 16, 32, 64], help="group sizes (default 4 8 16 32 64)")
    p.add_argument("--p", type=float, nargs="+", default=[0.5, 0.7, 0.8, 0.9, 0.95, 0.99], help="pass rates in [0, 1]")
    p.add_argument("--rho", type=float, default=0.0, help="intra-group correlation in [0, 1) (default 0: independent)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_table)

    p = sub.add_parser("population", help="one lab view of a Beta difficulty population",
                       description="Evaluate the lab's view: pass rates, realised and expected groups, filter, Jensen gap. "
                                   "With --filter the shares and mean_pass_rate are over the kept prompts; "
                                   "mean_pass_rate_all_prompts is over all of them (the lab's readout row).")
    add_view_arguments(p)
    p.add_argument("--rho", type=float, default=0.0, help="intra-group correlation in [0, 1) (default 0)")
    p.add_argument("--filter", type=float, nargs=2, metavar=("LO", "HI"), help="keep prompts with LO <= p_t <= HI")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_population)

    p = sub.add_parser("advantages", help="advantages of a reward vector, or expected gradient at (p, G)",
                       description="Either --rewards (advantages per estimator) or --p with --G "
                                   "(expected policy-gradient coefficient and coverage per estimator).")
    p.add_argument("--rewards", help="rewards of one group separated by commas, semicolons or spaces (as the lab's "
                   "advantage explorer reads them), e.g. 1,0,0,0")
    p.add_argument("--p", type=float, help="pass rate in (0, 1)")
    p.add_argument("--G", type=int, help="group size")
    p.add_argument("--estimator", nargs="+", default=list(adv.ESTIMATORS), help="estimators (default: all)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_advantages)

    p = sub.add_parser("validate", help="Monte Carlo check of the closed forms",
                       description="Simulate groups on a grid of (p, K) and check |MC - exact| <= z SE.")
    p.add_argument("--groups", type=int, default=400_000, help="groups per setting (default 400000)")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p.add_argument("--rho", type=float, default=0.0, help="intra-group correlation in [0, 1) (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_validate)


def cmd_table(args: argparse.Namespace) -> int:
    rows = []
    for K in args.K:
        for p in args.p:
            probs = outcomes.outcome_probabilities(p, K, args.rho)
            rows.append({"p": p, "K": K, "rho": args.rho, **{k: float(v) for k, v in probs.items()}})
    if args.json:
        print_json({"rows": rows})
    else:
        # one format per column (fixed, or scientific where a column spans more than 1e-4 to 1e6)
        fmt = {c: column_format(r[c] for r in rows)
               for c in ("p_all_pass", "p_all_fail", "p_unanimous", "p_useful", "rollouts_per_useful")}
        fmt.update(p="g", rho="g")  # the inputs, as given
        print_table(rows, ["p", "K", "rho", "p_all_pass", "p_all_fail", "p_unanimous", "p_useful", "rollouts_per_useful"], fmt)
    return 0


def cmd_population(args: argparse.Namespace) -> int:
    scenario = Scenario(n_prompts=args.n_prompts, a=args.a, b=args.b, seed=args.seed, progress=args.progress,
                        K=args.K, rho=args.rho, band=tuple(args.filter) if args.filter else None)
    view = evaluate(scenario)
    summary = dict(view.summary)
    # the summary's shares are over the kept prompts when a filter is set; the lab's readout row states its mean
    # pass rate over all prompts: say which, and give both
    summary["over"] = "kept prompts" if args.filter else "all prompts"
    summary["mean_pass_rate_all_prompts"] = float(view.pass_rate.mean())
    if args.json:
        print_json(summary)
    else:
        params = summary.pop("parameters")
        print("  ".join(f"{k}={v}" for k, v in params.items() if k != "gain"))
        over = summary.pop("over")
        if args.filter:
            lo, hi = args.filter
            print(f"shares and mean_pass_rate over the {summary['n_kept']} kept prompts ({lo:g} <= p_t <= {hi:g}); "
                  f"mean_pass_rate_all_prompts over all {summary['n_prompts']}")
        else:
            print(f"over {over}")
        for k, v in summary.items():
            print(f"{k:>30}  {v:.6g}" if isinstance(v, float) else f"{k:>30}  {v}")
    return 0


def parse_rewards(text: str) -> np.ndarray:
    """``--rewards``, parsed by the core (:func:`grpo_lab.sims.reward_text.parse_rewards`, as the lab's advantage
    explorer parses its typed vector); a refusal worded for the command line, naming the flag."""
    try:
        return reward_text.parse_rewards(text)
    except reward_text.RewardTextError as exc:
        words = {"empty": "--rewards is empty",
                 "not_a_number": f"--rewards must be numbers separated by commas or spaces; {exc.word!r} in {text!r} "
                                 "is not one",
                 "not_finite": f"--rewards must be finite numbers (no NaN or inf); got {exc.word!r}"}
        raise InputError(words.get(exc.kind, f"--rewards: {exc}")) from None


def cmd_advantages(args: argparse.Namespace) -> int:
    for name in args.estimator:
        adv.get_estimator(name)
    if args.rewards is not None:
        if args.p is not None or args.G is not None:
            raise InputError("give either --rewards or --p with --G, not both")
        r = parse_rewards(args.rewards)
        out = {name: adv.advantages(r, name) for name in args.estimator}
        if args.json:
            print_json(out)
        else:
            print("rewards   " + "  ".join(f"{x:8.4g}" for x in r))
            for name, a in out.items():
                print(f"{name:<9} " + "  ".join(f"{x:8.4f}" for x in a) + f"   max|A| {adv.max_abs_advantage(a):.4f}")
        return 0
    if args.p is None or args.G is None:
        raise InputError("give --rewards, or both --p and --G")
    if not 0 < args.p < 1:
        raise InputError(f"--p must lie strictly between 0 and 1 for the expected gradient, got {args.p:g}")
    coef = {n: float(adv.expected_gradient_coef(args.p, args.G, n)) for n in args.estimator}
    cov = {n: float(adv.coverage(args.p, args.G, n)) for n in args.estimator}
    if args.json:
        print_json({"p": args.p, "G": args.G, "expected_gradient_coef": coef, "coverage": cov})
    else:
        print_table([{"estimator": n, "expected_gradient_coef": coef[n], "coverage": cov[n]} for n in args.estimator],
                    ["estimator", "expected_gradient_coef", "coverage"],
                    {"expected_gradient_coef": ".4f", "coverage": ".4f"})
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    result = montecarlo.validate(n_groups=args.groups, seed=args.seed, rho=args.rho)
    if args.json:
        print_json(result)
    else:
        fmt = {"p": "g", "exact": ".6f", "mc": ".6f", "abs_diff": ".2e", "z": ".2f"}
        print_table(result["rows"], ["p", "K", "exact", "mc", "abs_diff", "z"], fmt)
        print(f"max_abs_diff {result['max_abs_diff']:.2e}  z_crit {result['z_crit']:.2f}  "
              f"groups {result['groups']}  {'passed' if result['passed'] else 'FAILED'}")
    return 0 if result["passed"] else 1
