"""Benchmarks for tapegrad (asv suites ``bench_*.py``, workloads, compare script).

This file must stay free of imports: asv imports this package before every
benchmark module, and the modules pin BLAS/OpenMP/Numba threads through
``os.environ`` *before* NumPy, Numba or torch are first imported.
"""
