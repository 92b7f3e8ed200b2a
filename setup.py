"""Maps the top-level folders onto the one import package `mia` (see pyproject.toml)."""

from setuptools import find_packages, setup

ROOTS = {"mia": "mia", "mia.memory": "memory", "mia.graph": "graph", "mia.training": "training", "mia.app": "app"}
DATA = ["*.npy", "*.toml", "*.yaml", "*.json", "*.jsonl.gz", "*.md", "*.txt", "*.jinja", "py.typed"]

packages, package_dir = [], {}
for name, folder in ROOTS.items():
    packages.append(name)
    package_dir[name] = folder
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=package_dir, package_data={name: DATA for name in packages})
