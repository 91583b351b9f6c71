"""The CPU demo (issue 14): SFT start, two GRPO runs, one shared timing pass, the report."""
