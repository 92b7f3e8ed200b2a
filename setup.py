"""Maps the top-level folders onto the one import package `mia` (see pyproject.toml)."""

from setuptools import find_packages, setup

ROOTS = {"mia": "mia", "mia.memory": "memory", "mia.graph": "graph", "mia.training": "training", "mia.app": "app"}
DATA = ["*.npy", "*.toml", "*.yaml", "*.json", "*.jsonl.gz", "*.md", "*.txt", "*.jinja", "py.typed"]

packages, package_dir = [], {}
for name, folder in ROOTS.items():
    packages.append(name)
    package_dir[name] = folder
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

# Package data beyond DATA: the training configs (training/configs/*.yaml, not a package) ship with
# mia.training; langgraph.json ships inside `mia` (matched by DATA's *.json).
EXTRA_DATA = {"mia.training": ["configs/*.yaml"]}

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={name: DATA + EXTRA_DATA.get(name, []) for name in packages},
)
