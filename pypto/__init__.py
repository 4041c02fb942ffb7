"""PyPTO reference: a tile DSL compiler, a simulated device, and compile profiling.

Not the PyPTO framework published as `pypto` on PyPI (same import name, another code base):
install this one from its checkout (`pip install -e .`). The local version label `+profiling`
says which one is imported, and can never be uploaded to the package index.
"""

__version__ = "0.1.0+profiling"
