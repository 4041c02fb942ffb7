"""PyPTO reference: a tile DSL compiler, a simulated device, and compile profiling."""

__version__ = "0.1.0"
