"""Compile-only planning of accelerator runs: what a run would need on a TPU slice or a set of GPU
nodes, found on a machine that has neither. JAX compiles a program ahead of time for
compile-only devices (libtpu's topologies for TPU, the CUDA plugin and a written-out GPU target
description for NVIDIA GPUs), and the compiled program's memory analysis says whether it fits;
`hardware` owns the chips, the slice names users type and those devices.
"""
