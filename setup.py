"""One import name, ``grpo_lab``, over the repository's two top-level folders.

``lab/`` (the app and the command line) installs as ``grpo_lab`` and ``sims/`` (the numerical core) as
``grpo_lab.sims``; nothing else lands at the top of site-packages (``tests/test_packaging.py`` builds
the wheel and checks). Everything else about the package is in ``pyproject.toml``.
"""
from setuptools import find_packages, setup

FOLDERS = {"grpo_lab": "lab", "grpo_lab.sims": "sims"}

PACKAGES = [f"{root}.{sub}" if sub else root
            for root, folder in FOLDERS.items() for sub in ["", *find_packages(folder)]]

setup(package_dir=FOLDERS, packages=PACKAGES)
