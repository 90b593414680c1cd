"""The forecast line of a run the Replay follows as it grows: the doctor's forecast, redone when the run grows.

:class:`LiveForecast` gives, for a followed run's record as it stands, one line: the doctor's one answer to "when"
(:func:`grpo_lab.sims.doctor.when.when`, what ``grpo-lab diagnose --json`` says under ``when``, the Diagnose report
and the Fleet tab show): the first stall (median, its interval and level, and P(stall within the next tenth of the
run)) where the loop's settings are known, and the expiry. A diagnosis takes about a second, so in a served session
it runs on a worker thread, never on the server's loop; while it runs the line keeps the last good forecast, saying
the step it covers, and before the first is in it shows the quick trend of the mixed share
(:func:`grpo_lab.sims.doctor.fleet.run_forecast`), labelled "quick trend, doctor pending". Requests made while one
runs are folded into one (the newest). A record the doctor refuses shows its reason, with the trend labelled.

:func:`trainer_settings` turns the Replay's trainer-loop controls (the Live lab's own: ``loop``, ``gen_batch``,
``train_batch``, ``cap``, and K, declared on :class:`grpo_lab.state.LabState`) into the doctor's settings, as the
command line's flags give them: DAPO is ``--gen-batch-size``, ``--train-batch-size``, ``--max-num-gen-batches cap``;
plain GRPO is a step of ``train_batch`` groups with no cap (the doctor then says it never raises: it crawls); K is
``--num-generations`` (a tracker log that does not say it). No loop: nothing given (the record's own config, if any).
When the log is truncated or replaced the page keeps its last good record, so this line keeps the last good
forecast with it (:class:`grpo_lab.replay.trackers.TrackerFollower`).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from grpo_lab.doctor_report.when import interval_words

__all__ = ["LiveForecast", "trend_line", "doctor_line", "trainer_settings", "PENDING"]

PENDING = "quick trend, doctor pending"  #: the label of the trend line while the doctor's forecast is computed

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The one worker thread that diagnoses followed runs for the process (made on first use)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(1, thread_name_prefix="replay-doctor")
        return _POOL


def trainer_settings(loop: str, K: int, gen_batch: int, train_batch: int, cap: int) -> tuple[dict | None, int | None]:
    """``(trainer_config, num_generations)`` for :func:`grpo_lab.sims.doctor.diagnose` from the Replay's trainer-loop
    controls (see the module docstring); ``(None, None)`` for no loop."""
    from grpo_lab.sims.doctor.trainer_config import read_trainer_config
    from grpo_lab.sims.loop_stall import LOOPS

    if loop not in LOOPS:
        return None, None
    if loop == "DAPO":
        cfg = read_trainer_config(gen_batch_size=gen_batch, train_batch_size=train_batch, max_num_gen_batches=cap)
    else:
        cfg = read_trainer_config(gen_batch_size=train_batch, train_batch_size=train_batch, max_num_gen_batches=0)
    return {**cfg, "source": f"the Replay's trainer loop ({loop})"}, int(K)


def trend_line(record, label: str = PENDING) -> str:
    """The quick trend's line (the fleet's triage trend of the mixed share), labelled ``label``; empty where the
    record has no per-step share."""
    from grpo_lab.sims.doctor.fleet import record_series, run_forecast
    from grpo_lab.sims.doctor.trainer_config import settings_from_record

    s, m, g = record_series(record)
    if not len(s):
        return ""
    f = run_forecast(s, m, g, settings_from_record(record.meta))
    head = f"Live forecast at step {f['last_step']} ({label}: trend of the mixed share, now {100 * f['mixed_now']:.1f}%): "
    if f["forecast"] is None:
        return head + f["reason"] + "."
    fc = f[f["forecast"]]
    what = "stall" if f["forecast"] == "stall" else "mixed share under 50%"
    if fc["step"] is None:
        return head + f"no {what} forecast within the horizon (95% interval {interval_words(fc['interval'])})."
    when = "now" if f["left"] == 0 else f"near step {fc['step']:.0f}"
    return head + f"{what} {when}, 95% interval {interval_words(fc['interval'])}."


def doctor_line(entry: dict) -> str:
    """The doctor's line of a kept diagnosis (:func:`grpo_lab.fleet_doctor.diagnose_entry`): the first stall and
    P(stall within the next tenth of the run) where there is a stall forecast, else why not; the expiry."""
    w = entry["when"]
    head = f"Live forecast at step {entry['last_step']} (the doctor's): "
    st = w["stall"]
    if st.get("available"):
        p = entry.get("p_stall_next")
        risk = "" if p is None else f"; P(stall within the next {entry['next_steps']} steps) {100 * p:.0f}%"
        where = "beyond the horizon" if st.get("step") is None else f"near step {st['step']:.0f}"
        stall = (f"first stall {where}, {100 * st['level']:.0f}% interval {interval_words(st['interval'])}{risk}"
                 + (f" ({st['cause_said']})" if st.get("cause_said") else ""))
    else:
        reason = st.get("reason") or "no stall forecast"
        if "needs the trainer's config" in reason:
            reason = "choose the trainer loop below for the stall risk"
        stall = f"stall: {reason}"
    e = w["expiry"]
    expiry = e["said"] if e.get("step") is None else f"mixed share under {e['threshold']:g} near step {e['step']:.0f}, " \
        f"{100 * e['level']:.0f}% interval {interval_words(e['interval'])}"
    return head + f"{stall}. Expiry: {expiry}."


class LiveForecast:
    """One Replay session's forecast line (see the module docstring). ``show(text)`` puts a line on the page; it is
    called on the server's loop (``doc.add_next_tick_callback``) for a line computed in the worker, or directly
    without a served document (``doc`` None: everything here and now)."""

    def __init__(self, show, doc=None):
        self.show = show
        self.doc = doc
        self.line = ""
        self._token = object()  # the run shown: a new run drops what was computed for the last
        self._entry = None  # the last good doctor's entry of this run
        self._busy = False
        self._next = None  # the newest request made while one runs

    def clear(self) -> None:
        """No followed run: no line."""
        self._token, self._entry, self._next = object(), None, None
        self._put("")

    def update(self, record, settings=(None, None), same_run: bool = True) -> None:
        """Forecast ``record`` (the followed run as it stands) under ``settings`` (:func:`trainer_settings`);
        ``same_run`` False: another run (or other settings): the last forecast is not this one's."""
        if not same_run:
            self._token, self._entry = object(), None
        request = (record, settings, self._token)
        if self.doc is None:
            self._done(request, self._compute(record, settings))
            return
        self._put(self._waiting(record))
        if self._busy:
            self._next = request
            return
        self._start(request)

    def _waiting(self, record) -> str:
        from grpo_lab.sims.doctor.fleet import last_step

        if self._entry is not None and "when" in self._entry:
            now = last_step(record)
            return doctor_line(self._entry) + ("" if now == self._entry["last_step"] else
                                               f" The run has reached step {now}: the doctor is updating.")
        return trend_line(record)

    def _start(self, request) -> None:
        self._busy = True
        future = _pool().submit(self._compute, request[0], request[1])
        future.add_done_callback(lambda f: self.doc.add_next_tick_callback(lambda: self._landed(request, f)))

    def _landed(self, request, future) -> None:
        self._busy = False
        try:
            entry = future.result()
        except Exception as exc:  # noqa: BLE001: the page keeps working and says so
            entry = {"error": f"{type(exc).__name__}: {exc}"}
        self._done(request, entry)
        if self._next is not None:
            nxt, self._next = self._next, None
            if nxt[2] is self._token:
                self._start(nxt)

    @staticmethod
    def _compute(record, settings) -> dict:
        from grpo_lab.fleet_doctor import diagnose_entry
        from grpo_lab.sims.doctor.forecast import DEFAULT_THRESHOLD

        cfg, K = settings
        return diagnose_entry(record, cfg, DEFAULT_THRESHOLD, num_generations=K)

    def _done(self, request, entry: dict) -> None:
        record, _, token = request
        if token is not self._token:
            return  # another run (or other settings) since
        if "when" in entry:
            self._entry = entry
            self._put(doctor_line(entry) if self._next is None else self._waiting(self._next[0]))
        elif self._entry is not None:  # the last good forecast stays, and why it was not updated
            self._put(f"{doctor_line(self._entry)} Not updated: {entry['error']}")
        else:
            trend = trend_line(record, "quick trend: the doctor cannot forecast this run")
            self._put(f"The doctor cannot forecast this run: {entry['error']} {trend}".strip())

    def _put(self, text: str) -> None:
        self.line = text
        self.show(text)
