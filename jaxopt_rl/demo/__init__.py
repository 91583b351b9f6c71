"""The CPU demo: SFT start, two GRPO runs, one shared timing pass, the report."""
