"""More trainers' configs (#33 item 4) and the cost of a trained step under each trainer's loop (sims/doctor/cost.py).

The configs: the fixtures copied from each trainer's repository (tests/fixtures/trainer_configs/README.md) read
into the values their sources give, bad ones refused with one line. The cost: each scheme's expected prompts
per trained step against an event-driven Monte Carlo of the trainer's own loop (random completion times), and
the V1 forecast on a saturating shipped run.
"""

from __future__ import annotations

import heapq
import json
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.doctor_report import html_report, text_report
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.cost import prompts_per_step
from grpo_lab.sims.doctor.stall import rounds_distribution
from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import read_record

FIX = Path(__file__).parent / "fixtures" / "trainer_configs"
PLAIN = Path(__file__).parent.parent / "runs" / "broad-g4-dr_grpo-lr0.0008-s1"


@pytest.mark.parametrize("name,expect", [
    ("verl_v1_dapo.yaml", {"trainer": "verl-v1", "train_batch": 1024, "gen_batch": 1024, "cap": 0, "K": 16,
                           "enable": True, "scheme": "verl-v1", "inflight": 1}),
    ("skyrl_dapo.yaml", {"trainer": "skyrl", "train_batch": 1024, "gen_batch": 1024, "cap": 30, "K": 5, "enable": True,
                         "scheme": "rounds"}),
    ("openrlhf_dapo.sh", {"trainer": "openrlhf", "train_batch": 128, "gen_batch": 128, "cap": 0, "K": 8, "enable": True,
                          "scheme": "replace", "keep_range": [0.0, 1.0]}),
    ("prime_rl_wiki_search.toml", {"trainer": "prime-rl", "train_batch": 512 // 16, "K": 16, "enable": True,
                                   "scheme": "replace", "cap": 0}),
    ("nemo_rl_dapo_qwen2.5_7b.yaml", {"trainer": "nemo-rl", "train_batch": 512, "gen_batch": 1536, "cap": 11, "K": 16,
                                      "enable": True, "scheme": "rounds"}),
])
def test_fixtures_read_as_their_sources_say(name, expect):
    s = read_trainer_config(FIX / name)
    assert {k: s[k] for k in expect} == expect and s["source"].endswith(name)


def test_verl_recipe_v1_switch_and_notes(tmp_path):
    recipe = {"data": {"train_batch_size": 64, "gen_batch_size": 96}, "actor_rollout_ref": {"rollout": {"n": 8}},
              "algorithm": {"filter_groups": {"enable": True, "max_num_gen_batches": 3}}}
    f = tmp_path / "recipe.json"
    f.write_text(json.dumps(recipe))
    s = read_trainer_config(f)
    assert (s["trainer"], s["scheme"], s["gen_batch"], s["cap"]) == ("verl", "rounds", 96, 3)
    recipe["trainer"] = {"use_v1": True, "v1": {"trainer_mode": "separate_async"}}
    recipe["algorithm"]["filter_groups"]["max_inflight_gen_batches"] = 2
    f.write_text(json.dumps(recipe))
    s = read_trainer_config(f)
    assert (s["trainer"], s["scheme"], s["gen_batch"], s["cap"], s["inflight"]) == ("verl-v1", "replace", 64, 0, 2)
    assert "max_num_gen_batches = 3 is ignored" in s["note"] and "separate_async" in s["note"]
    # the key that exists only for V1 implies it unless use_v1 is false
    v = {"data.train_batch_size": 32, "algorithm.filter_groups.max_inflight_gen_batches": 2}
    f.write_text(json.dumps(v))
    assert read_trainer_config(f)["scheme"] == "verl-v1"
    f.write_text(json.dumps({**v, "trainer.use_v1": False}))
    assert read_trainer_config(f)["scheme"] == "rounds"


def test_prime_rl_without_gate_does_not_resample_and_pools_are_noted(tmp_path):
    f = tmp_path / "orch.toml"
    f.write_text('batch_size = 256\ngroup_size = 8\n[[train.source]]\nname = "x"\n'
                 '[train.source.curriculum.sampler]\ntype = "difficulty_pool"\n')
    s = read_trainer_config(f)
    assert s["train_batch"] == 32 and s["K"] == 8 and not s["enable"]
    assert "difficulty_pool" in s["note"] and "without backfilling" in s["note"]


@pytest.mark.parametrize("name,text,needle", [
    ("v1.yaml", "data: {train_batch_size: 8}\ntrainer: {use_v1: true, v1: {trainer_mode: fast}}\n", "trainer_mode"),
    ("v1b.yaml", "data: {train_batch_size: 8}\nalgorithm: {filter_groups: {max_inflight_gen_batches: 0}}\n",
     "max_inflight_gen_batches must be an integer >= 1"),
    ("old.sh", "python -m openrlhf.cli.train_ppo_ray --rollout_batch_size 8 --dynamic_filtering\n", "before 0.9"),
    ("quote.sh", "--rollout.batch_size 8 --algo.dynamic_filtering_enable 'x\n", "cannot split"),
    ("range.sh", "--rollout.batch_size 8 --rollout.n_samples_per_prompt 4 --algo.dynamic_filtering_enable "
                 "--algo.dynamic_filtering_range 1 0\n", "lo < hi"),
    ("none.args", "--foo 1\n", "no OpenRLHF arguments"),
    ("tok.toml", "[orchestrator]\ntoken_batch_size = 4096\ngroup_size = 8\n", "token_batch_size"),
    ("mult.toml", "[orchestrator]\nbatch_size = 100\ngroup_size = 8\n", "multiple of group_size"),
    ("bad.toml", "[orchestrator\n", "not valid TOML"),
    ("nemo.yaml", "grpo: {num_prompts_per_step: 8, batch_multiplier: 2}\n", "batch_multiplier"),
    ("sky.yaml", "trainer: {train_batch_size: 8, algorithm: {dynamic_sampling: {type: sometimes}}}\n", "type must be"),
])
def test_bad_configs_are_one_line_and_exit_2(capsys, tmp_path, name, text, needle):
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(InputError, match=needle):
        read_trainer_config(f)
    code = main(["diagnose", str(PLAIN), "--trainer-config", str(f)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and needle.split()[0] in err


# ------------------------------------------------------------------ the cost of a step, against the loops themselves

def simulate_loop(u, T, scheme, inflight=1, reps=3000, seed=0):
    """Prompts generated per trained step by an event-driven run of the trainer's loop: each dispatched prompt
    finishes after an exponential time, mixed with probability u. verl-v1: verl's ReplayBuffer.sample (2 refill
    credits per filtered group, at most inflight x T in flight, all in flight drained at the stop); replace:
    OpenRLHF's _generate_vllm (one new prompt per filtered one)."""
    rng = np.random.default_rng(seed)
    out = np.empty(reps)
    for i in range(reps):
        heap, t, dispatched, credits, kept = [], 0.0, 0, 0, 0

        def send(n):
            nonlocal dispatched
            for _ in range(n):
                heapq.heappush(heap, (t + rng.exponential(), rng.random() < u))
            dispatched += n

        send(T)
        while kept < T:
            t, mixed = heapq.heappop(heap)
            kept += mixed
            if scheme == "replace":
                send(0 if mixed else 1)
            elif kept < T:  # a freed slot takes a waiting credit whatever the finished group was
                credits += 0 if mixed else 2
                n = min(credits, inflight * T - len(heap))
                send(n)
                credits -= n
        out[i] = dispatched  # what is still in flight is drained (generated) and discarded
    return out


@pytest.mark.parametrize("scheme,u,T,M", [("verl-v1", 0.3, 12, 1), ("verl-v1", 0.6, 10, 2), ("replace", 0.25, 12, 1)])
def test_prompts_per_step_match_the_loop(scheme, u, T, M):
    sim = simulate_loop(u, T, scheme, M)
    expected = prompts_per_step(u, {"scheme": scheme, "train_batch": T, "gen_batch": 1, "cap": 0, "inflight": M})
    assert abs(expected - sim.mean()) < 4 * sim.std() / np.sqrt(sim.size)
    if scheme == "verl-v1":  # the drained surplus is real: more than the replace scheme's T / u
        assert expected > T / u + 1


def test_rounds_cost_matches_the_stall_round_distribution():
    u = np.full(400, 0.35)
    for cap in (0, 4):
        d = rounds_distribution(u, 48, 32, cap, None)
        cdf = np.concatenate([[0.0], d["cdf"]])
        e_capped = float(np.sum(1 - cdf[:-1]))  # E[min(R, cap)] = sum_r P(R >= r)
        got = prompts_per_step(0.35, {"scheme": "rounds", "train_batch": 32, "gen_batch": 48, "cap": cap})
        assert got == pytest.approx(48 * e_capped, rel=1e-6)


def test_v1_cost_forecast_in_diagnose_and_report(tmp_path):
    settings = {**read_trainer_config(FIX / "verl_v1_dapo.yaml", train_batch_size=32), "K": None}  # the run's K = 4
    d = diagnose(read_record(PLAIN), trainer_config=settings)
    cf = d["cost_forecast"]
    assert cf["available"] and cf["scheme"] == "verl-v1" and cf["K"] == 4
    for u, p in zip(cf["effective_rate"], cf["prompts"]):
        assert p == pytest.approx(prompts_per_step(u, {**settings, "train_batch": 32}), rel=1e-12)
    assert cf["ratio"][-1] > 1.5  # the run saturates: a trained step costs more and more
    assert np.all(np.diff(cf["prompts"]) >= -1e-9)
    dapo = next(r for r in d["samplers"]["rows"] if r["sampler"] == "dapo")
    s = d["samplers"]["settings"]
    assert (s["scheme"], s["batch"], s["gen_batch"]) == ("verl-v1", 32, 32)
    from grpo_lab.sims.outcomes import p_useful
    from grpo_lab.sims.samplers import beta_pass_rates
    pop = d["samplers"]["population"]
    p = beta_pass_rates([tuple(c) for c in pop] if len(pop) > 1 else tuple(pop[0][1:]), s["prompts"])
    ub = float(np.mean(p_useful(p, 4)))
    assert dapo["useful_per_1000"] == pytest.approx(1000 * 32 / (4 * prompts_per_step(ub, {**settings,
                                                                                       "train_batch": 32})), rel=1e-9)
    text = text_report(d)
    assert "cost per trained step (verl V1" in text and "at most 1 x 32 prompts in flight" in text
    page = html_report(d)
    assert "<h2>Cost per trained step</h2>" in page
    # the HTML table's numbers read back against the JSON: the last logged step, then future steps of the series
    import re
    table = page[page.index('<table class="doctor-cost">'):]
    table = table[:table.index("</table>")]
    rows = [re.findall(r"<td>([^<]*)</td>", r) for r in table.split("<tr>")[2:]]
    assert rows[0][0] == f"{cf['now']['step']} (now)" and float(rows[0][2].replace(",", "")) == round(cf["now"]["prompts"])
    for cells in rows[1:]:
        i = cf["steps"].index(int(cells[0]))
        assert float(cells[2].replace(",", "")) == round(cf["prompts"][i])
        assert float(cells[3].replace(",", "")) == round(cf["rollouts"][i])
        assert abs(float(cells[4]) - cf["ratio"][i]) <= 0.005 + 1e-9
    assert "cost per trained step" not in text_report(diagnose(read_record(PLAIN)))  # no config: no section


def test_samplers_command_takes_a_trainer_config(capsys):
    """`grpo-lab samplers --trainer-config`: DAPO's row at the config's sizes and loop, K from the config."""
    code = main(["samplers", "--trainer-config", str(FIX / "skyrl_dapo.yaml"), "--n-prompts", "300", "--json"])
    out = json.loads(capsys.readouterr().out)
    s = out["settings"]
    assert code == 0 and (s["K"], s["batch"], s["gen_batch"], s["max_num_gen_batches"]) == (5, 1024, 1024, 30)
    assert "skyrl config" in s["sizes_from"]
    code = main(["samplers", "--trainer-config", str(FIX / "openrlhf_dapo.sh"), "--n-prompts", "300"])
    out = capsys.readouterr().out
    assert code == 0 and "K = 8" in out and "sizes: openrlhf config" in out
