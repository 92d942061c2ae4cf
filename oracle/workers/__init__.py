"""Everything that runs inside a converter environment, under its Python: the in-environment
scripts (probe, scan, asset, whole-program, region-cut, location workers), their shared request
loop, and the probe builders and checkpoint reader they import. Standard library, torch, numpy,
safetensors and the converter only: no main-process code. This package's `__init__` imports
nothing, so a worker importing one module of it loads no other.
"""
