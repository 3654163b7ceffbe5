"""Packages for setuptools (the rest of the build is in pyproject.toml).

``data/`` lives at the top of the repository, next to ``notebooks/`` and ``tests/``, but what the
package reads at run time must travel inside a wheel: ``package_dir`` maps the package
``agentlab.data`` onto that folder, so the build copies the files ``pyproject.toml`` lists
(``[tool.setuptools.package-data]``) into ``agentlab/data`` of the wheel. ``pyproject.toml``
alone cannot add a mapped package to the ones ``packages.find`` discovers, hence this file.
``agentlab.bundle`` finds the folder in either place.
"""
from setuptools import find_packages, setup

# Folders that hold only data are listed as packages too (setuptools warns, and will one day
# drop their files, when an importable folder is missing from ``packages``).
DATA_PACKAGES = ["agentlab.data", "agentlab.data.corpus", "agentlab.data.tiktoken",
                 "agentlab.widgets.jupyterlab"]

setup(packages=find_packages(include=["agentlab", "agentlab.*"]) + DATA_PACKAGES,
      package_dir={"agentlab.data": "data"})
