"""One import name, ``grpo_lab``, over the repository's top-level folders.

``lab/`` (the app and the command line) installs as ``grpo_lab``, ``sims/`` (the numerical core, numpy and
scipy only) as ``grpo_lab.sims``, ``train/`` (the small PyTorch GRPO trainer) as ``grpo_lab.train`` and
``trl_recorder/`` (the TRL callback and the SmolLM2 run) as ``grpo_lab.trl_recorder``; the shipped run records, ``runs/``, go along as ``grpo_lab/runs`` (data only: the Replay tab
and the run doctor list them in an installed package as in a checkout). Nothing else lands at the top of
site-packages (``tests/test_packaging.py`` builds the wheel and checks). Everything else about the package is in
``pyproject.toml``.
"""
from setuptools import find_packages, setup

FOLDERS = {"grpo_lab": "lab", "grpo_lab.sims": "sims", "grpo_lab.train": "train", "grpo_lab.trl_recorder": "trl_recorder"}
RUNS = {"grpo_lab.runs": "runs"}  #: data: records of runs (run.json, its .npz arrays, a study's tables)

PACKAGES = [f"{root}.{sub}" if sub else root
            for root, folder in FOLDERS.items() for sub in ["", *find_packages(folder)]]

setup(package_dir={**FOLDERS, **RUNS}, packages=[*PACKAGES, *RUNS])  # package data: pyproject.toml
