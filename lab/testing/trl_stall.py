"""A TRL run on CPU built to stall: DAPO dynamic sampling (:func:`grpo_lab.trl_recorder.dynamic_sampling_trainer`)
with a cap, on the tiny model of :mod:`.trl_tiny`, and a reward whose pass rate drifts up with the optimizer step,
so the mixed groups thin out and a step eventually cannot fill its batch within the cap (``BatchNotFilled``): the
real stall the forecast must see coming.

The reward of a rollout of prompt i at step s is 1 with probability expit(a_i + ``drift`` s), a_i spread evenly over
[``A_LO``, ``A_HI``], drawn from a generator keyed by (``seed``, s, the call's count): the model's completions do not
matter (the population and its drift are set here, the loop and its logs are TRL's).
"""

from __future__ import annotations

import numpy as np

from .trl_tiny import make_trainer

A_LO, A_HI = -2.5, 1.0  #: the prompts' starting logits of the pass rate


def drifting_reward(holder: dict, n_prompts: int, drift: float, seed: int = 0):
    """A reward function ``correct`` whose pass rate drifts with ``holder['trainer'].state.global_step``."""
    a = np.linspace(A_LO, A_HI, n_prompts)
    calls = [0]

    def correct(prompts, completions, **kwargs):
        step = holder["trainer"].state.global_step
        calls[0] += 1
        rng = np.random.default_rng([seed, step, calls[0]])
        idx = [int(p[1:-1]) for p in prompts]  # trl_tiny's prompts are "<char><i>="
        p = 1.0 / (1.0 + np.exp(-(a[idx] + drift * step)))
        return [float(x) for x in (rng.random(len(p)) < p)]

    return correct


def stalling_trainer(out, *, cap: int = 2, n_prompts: int = 48, prompts_per_round: int = 4, drift: float = 0.12,
                     max_steps: int = 80, seed: int = 0, **overrides):
    """(trainer, holder): the DAPO trainer of the module docstring, K = 4, ``prompts_per_round`` prompts a round."""
    from grpo_lab.trl_recorder import dynamic_sampling_trainer

    holder = {}
    cls = dynamic_sampling_trainer(max_num_gen_batches=cap)
    kw = dict(per_device_train_batch_size=4 * prompts_per_round, max_steps=max_steps)
    kw.update(overrides)
    trainer = make_trainer(out, [], trainer_cls=cls, funcs=1, n_prompts=n_prompts, **kw)
    trainer.reward_funcs[0] = drifting_reward(holder, n_prompts, drift, seed)
    holder["trainer"] = trainer
    return trainer, holder
