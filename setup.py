"""The one part of the build pyproject.toml cannot state: the optional C walk of the offset index.

``jcli_sidecar/ipynb/_nbwalk.c`` is built where a C compiler and Python's
headers are at hand; where they are not, the package installs without it
and the index walks in Python (``jcli_sidecar/ipynb/jsonscan.py``).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("jcli_sidecar.ipynb._nbwalk", ["jcli_sidecar/ipynb/_nbwalk.c"], optional=True)])
