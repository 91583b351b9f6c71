"""GRPO training: advantages, loss, train state and step, the asynchronous loop, checkpoints."""
