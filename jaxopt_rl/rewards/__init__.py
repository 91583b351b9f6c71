"""Reward kernels of spec/rewards.md: pure, jitted, vectorised over a padded batch of rollouts."""
