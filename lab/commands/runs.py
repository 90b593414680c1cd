"""``grpo-lab runs``: every run a command accepts by label, with the folder it lives in.

The catalogue is :func:`grpo_lab.replay.catalog.catalogue`: the shipped runs, the user's runs folder
(``$XDG_DATA_HOME/grpo-lab/runs``, by default ``~/.local/share/grpo-lab/runs``), ``$GRPO_LAB_RUNS`` and
``--runs DIR``, each adding to the ones before it. The tracker logs found in those folders, which the lab's Replay
lists and follows as they grow (:func:`grpo_lab.replay.trackers.tracker_logs`), are listed after them by path (give
the path to ``grpo-lab ingest`` or ``grpo-lab watch``).
"""

from __future__ import annotations

import argparse

from ._args import add_runs_argument
from ._io import print_json, print_table


def register(sub) -> None:
    p = sub.add_parser("runs", help="list the runs that inspect, compare, diagnose and the lab know by label",
                       description="List the shipped runs and yours (the user's runs folder, $GRPO_LAB_RUNS, --runs) "
                                   "by label, with where each lives. Any command that takes a run accepts its label "
                                   "or a path.")
    add_runs_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_runs)


def cmd_runs(args: argparse.Namespace) -> int:
    from grpo_lab.replay.catalog import catalogue
    from grpo_lab.replay.trackers import tracker_logs

    cat = catalogue(args.runs)
    rows = [{"label": label, "from": origin, "path": str(path)} for label, (path, origin) in cat.runs.items()]
    hidden = [{"label": label, "from": origin, "path": str(path)} for label, path, origin in cat.hidden]
    folders = [{"from": f.origin, "path": str(f.path), "exists": f.path.is_dir()} for f in cat.folders]
    trackers = [{"label": label, "format": src.fmt, "path": src.path}
                for label, src in tracker_logs(extra=args.runs).items()]
    if args.json:
        print_json({"runs": rows, "hidden": hidden, "folders": folders, "trackers": trackers})
        return 0
    if rows:
        print_table(rows, ["label", "from", "path"], left=("label", "from", "path"))
    else:
        print("no runs")
    print()
    for f in folders:
        print(f"{f['from']:>14}  {f['path']}" + ("" if f["exists"] else "  (absent)"))
    for t in trackers:
        print(f"{t['label']}: {t['path']} (the lab's Replay follows it; grpo-lab ingest or watch this path)")
    for h in hidden:
        print(f"hidden: {h['label']} in {h['path']} ({h['from']}): an earlier folder has this label; give its path")
    return 0
