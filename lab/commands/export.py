"""``grpo-lab export``: write the lab's grid as one self-contained interactive HTML file (see lab/export.py)."""

from __future__ import annotations

import argparse

from grpo_lab.embed import MAX_CAPTION_CHARS

from ._args import add_view_arguments


def register(sub) -> None:
    p = sub.add_parser(
        "export", help="write a self-contained interactive HTML page (for blog posts)",
        description="Write one HTML file that runs the lab's grid in the browser with no server and no "
                    "network: progress (with play), K, the filter and its band, and new draws cycling "
                    "through populations embedded in the file.")
    p.add_argument("--out", default="decay.html", help="output file (default decay.html); written atomically")
    add_view_arguments(p, start=True, max_prompts=", at most 10000")
    p.add_argument("--filter", type=float, nargs=2, metavar=("LO", "HI"),
                   help="start with the difficulty filter on, keeping LO <= p_t <= HI")
    p.add_argument("--band", type=float, nargs=2, metavar=("LO", "HI"),
                   help="the filter's band when it starts off (default 0.2 0.8)")
    p.add_argument("--draws", type=int, default=None,
                   help="populations to embed, seeds S, S+1, ... (default: as many as fit in 2.5 MB, at most 5)")
    p.add_argument("--gain", type=float, default=None, help="decay gain g (default: the core's fitted gain)")
    p.add_argument("--title", default=None, help="page title")
    p.add_argument("--no-title", action="store_true",
                   help="leave out the heading and its introduction (for a post that has its own)")
    p.add_argument("--no-footer", action="store_true", help="leave out the provenance footer")
    p.add_argument("--caption", default=None,
                   help=f"a line of plain text above the grid (at most {MAX_CAPTION_CHARS} characters; shown as text, "
                        "never markup)")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from grpo_lab.export import export, make_spec

    scenario = dict(n_prompts=args.n_prompts, a=args.a, b=args.b, seed=args.seed, progress=args.progress, K=args.K)
    if args.gain is not None:
        scenario["gain"] = args.gain
    spec = make_spec(filter_band=args.filter, band=args.band, draws=args.draws, title=args.title,
                     no_title=args.no_title, no_footer=args.no_footer, caption=args.caption, **scenario)
    info = export(spec, args.out)
    print(f"wrote {info['path']} ({info['bytes'] / 1e6:.2f} MB, {info['draws']} population"
          f"{'s' if info['draws'] != 1 else ''}: seeds {', '.join(map(str, info['seeds']))})")
    return 0
