"""``grpo-lab samplers``: seven samplers side by side on a Beta population at an equal rollout budget
(:mod:`grpo_lab.sims.samplers`; docs/doctor.md, "Samplers side by side")."""

from __future__ import annotations

import argparse

from ._args import add_view_arguments
from ._io import print_json


def register(sub) -> None:
    from grpo_lab.sims.samplers import DEFAULTS as D

    p = sub.add_parser("samplers", help="plain GRPO, DAPO, band, retirement, GRESO, Knapsack, PODS side by side",
                       description="Useful groups per 1,000 rollouts, rollouts per useful group, the share of prompts "
                                   "never trained on and the expiry shift of seven samplers on one Beta population "
                                   "at the same rollout budget.")
    add_view_arguments(p, max_prompts=", at most 100,000")
    p.add_argument("--epochs", type=float, default=D["epochs"],
                   help=f"rollout budget in epochs of plain GRPO, N K each (default {D['epochs']:g})")
    p.add_argument("--threshold", type=float, default=D["threshold"],
                   help=f"useful groups per K rollouts below which a sampler has expired (default {D['threshold']:g})")
    p.add_argument("--batch", type=int, default=D["batch"], help=f"DAPO train batch in groups (verl "
                   f"data.train_batch_size; default {D['batch']})")
    p.add_argument("--gen-batch", type=int, default=D["gen_batch"],
                   help=f"DAPO prompts per generation round (verl data.gen_batch_size; default {D['gen_batch']})")
    p.add_argument("--max-num-gen-batches", type=int, default=D["max_num_gen_batches"],
                   help=f"DAPO rounds before a step stalls, 0: no cap (verl algorithm.filter_groups."
                        f"max_num_gen_batches; default {D['max_num_gen_batches']})")
    p.add_argument("--band", type=float, nargs=2, metavar=("LO", "HI"), default=D["band"],
                   help=f"pass-rate band kept (default {D['band'][0]:g} {D['band'][1]:g})")
    p.add_argument("--retire-after", type=int, default=D["n_retire"],
                   help=f"all-pass groups in a row that retire a prompt (default {D['n_retire']})")
    p.add_argument("--p-easy", type=float, default=D["p_easy"],
                   help=f"GRESO exploration probability after all-pass (default {D['p_easy']:g})")
    p.add_argument("--p-hard", type=float, default=D["p_hard"],
                   help=f"GRESO exploration probability after all-fail (default {D['p_hard']:g})")
    p.add_argument("--pods-factor", type=int, default=D["pods_factor"],
                   help=f"PODS generates this many times K and trains on K (default {D['pods_factor']})")
    p.add_argument("--trainer-config", metavar="FILE", default=None,
                   help="take DAPO's batch, generation batch, cap and loop (and K, if the config has it) from a "
                        "trainer's config, as `grpo-lab diagnose --trainer-config` reads it; overrides the flags above")
    p.add_argument("--steps", type=int, default=None, help="steps of a run whose end is t = 1 (shift in steps)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=cmd_samplers)


def cmd_samplers(args: argparse.Namespace) -> int:
    from grpo_lab.doctor_report.samplers import samplers_text
    from grpo_lab.sims.errors import InputError
    from grpo_lab.sims.population import draw_population
    from grpo_lab.sims.samplers import compare

    if args.steps is not None and args.steps < 1:
        raise InputError(f"--steps must be a positive integer, got {args.steps}")
    sizes = {"K": args.K, "batch": args.batch, "gen_batch": args.gen_batch,
             "max_num_gen_batches": args.max_num_gen_batches, "scheme": "rounds", "inflight": 1}
    if args.trainer_config:
        from grpo_lab.sims.doctor.samplers import sizes as config_sizes
        from grpo_lab.sims.doctor.trainer_config import read_trainer_config, step_settings

        sizes = config_sizes(step_settings({}, read_trainer_config(args.trainer_config), args.K), args.K, args.batch)
    pop = draw_population(args.n_prompts, args.a, args.b, args.seed)
    out = compare(pop.pass_rates, sizes["K"], args.progress, steps=args.steps, epochs=args.epochs,
                  threshold=args.threshold, batch=sizes["batch"], gen_batch=sizes["gen_batch"],
                  max_num_gen_batches=sizes["max_num_gen_batches"], scheme=sizes["scheme"], inflight=sizes["inflight"],
                  band=tuple(args.band), n_retire=args.retire_after, p_easy=args.p_easy, p_hard=args.p_hard,
                  pods_factor=args.pods_factor)
    if args.trainer_config:
        out["settings"]["sizes_from"] = sizes["sizes_from"]
    if args.json:
        print_json(out)
        return 0
    print(f"Beta({args.a:g}, {args.b:g}) population (seed {args.seed}) at progress t = {args.progress:g}")
    print("\n".join(samplers_text(out)))
    return 0
