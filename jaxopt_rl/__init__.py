"""jaxopt-rl: JAX-native reinforcement learning for code models that write correct and fast code.

Packages: `rewards` (jitted reward kernels), `data` (problems, tests, references), `model`
(Flax decoder and checkpoints), `sampling` (jitted sampler), `training` (GRPO), `evaluation`,
`simulator`. Execution of generated programs lives in the separate `sandbox_cluster` package.
"""

__version__ = "0.1.0"
