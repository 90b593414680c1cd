"""The Live lab's stall overlay beside the frame the grid keeps today: what a redraw costs with and without it.

A Live lab redraw computes its frame in :meth:`grpo_lab.views.live.LiveLab.prepare` (the view, the curves Python
sends, the plots' text): the overlay (:func:`grpo_lab.views.decay.stall_columns`, the core's
:func:`grpo_lab.sims.loop_stall.loop_stall_curve`) is computed there, in the same frame. For each setting below,
Play's frames are replayed (progress 0, 0.05, ..., 1: the overlay's curve is cached across progresses of one view,
as the decay columns are) and, the heavier case, every K from 2 to 16 at a fixed progress (a new curve each time);
each timed with no loop, with DAPO and with GRPO, in this process, interleaved within each repeat. Printed: the median prepare time
of each, the overlay's share, and the frame budget it must stay within: :data:`grpo_lab.views.play_budget.INLINE_WORK_S`
(a frame under it is computed inline, on the event loop; over it, in the heavy-work thread, spaced by the budget)
and Play's sync period (:data:`grpo_lab.grid.spec.PLAY_SYNC_MS`). Load average printed beside (two shared cores).

Run: ``python benchmarks/bench_stall_overlay.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> int:
    from grpo_lab.grid.spec import PLAY_SYNC_MS
    from grpo_lab.state import LabState, PlayState
    from grpo_lab.views import decay
    from grpo_lab.views.live import LiveLab
    from grpo_lab.views.play_budget import INLINE_WORK_S

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--light", action="store_true", help="leave out 20,000 prompts at rho 0.9 (minutes under load)")
    args = ap.parse_args()
    settings = [("default (600 prompts, rho 0)", {}),
                ("20,000 prompts, rho 0", {"n_prompts": 20_000}),
                ("20,000 prompts, rho 0.9", {"n_prompts": 20_000, "rho": 0.9})][:2 if args.light else 3]
    loops = [("no loop", {"loop": "none"}), ("DAPO", {"loop": "DAPO"}), ("GRPO", {"loop": "GRPO"})]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores; frame budget: "
          f"inline under {1000 * INLINE_WORK_S:.0f} ms, Play syncs every {PLAY_SYNC_MS} ms")
    print(f"{'setting':<30} {'frames':<22} " + " ".join(f"{name:>10}" for name, _ in loops) + "   overlay")
    for label, values in settings:
        lab = LabState(**values)
        live = LiveLab(lab, PlayState())
        for frames, change in (("Play (21 progresses)", [{"progress": i / 20} for i in range(21)]),
                               ("K 2..16 (new curves)", [{"K": k} for k in range(2, 17)])):
            times = {name: [] for name, _ in loops}
            for _ in range(args.repeat):  # the three interleaved in each repeat: the machine's load shared alike
                for name, loop in loops:
                    lab.param.update(**loop)
                    decay._STALLS.clear()  # every repeat computes its curves anew (the memo is per view)
                    decay._CURVES.clear()
                    t = time.perf_counter()
                    for c in change:
                        lab.param.update(**c)
                        live.prepare(lab.rho > 0)
                    times[name].append((time.perf_counter() - t) / len(change))
            cols = [1000 * statistics.median(times[name]) for name, _ in loops]
            over = max(cols[1:]) - cols[0]
            print(f"{label:<30} {frames:<22} " + " ".join(f"{c:8.1f}ms" for c in cols) +
                  f"   {over:+.1f} ms a frame ({100 * over / cols[0]:+.0f}%)")
        lab.param.update(loop="none")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
