"""Example execution records shipped with the package (made by `make_example_records.py`)."""

from pathlib import Path

EXAMPLE_RECORDS = Path(__file__).with_name("example_records.jsonl")
