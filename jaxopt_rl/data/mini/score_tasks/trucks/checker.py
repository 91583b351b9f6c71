"""Checker of the `trucks` score task: a split of the parcels onto two trucks scores the
absolute difference of the two loads (an integer, exact).

The program returns one line per parcel, `0` or `1` (surrounding spaces tolerated). Anything
else (wrong line count, any other token) is "invalid".
"""
import json


def check(test_input: str, program_output: str, expected_output: str | None):
    weights = json.loads(test_input)["weights"]
    lines = program_output.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a single trailing newline is tolerated
    if len(lines) != len(weights):
        return "invalid"
    loads = [0, 0]
    for line, weight in zip(lines, weights):
        token = line.strip()
        if token not in ("0", "1"):
            return "invalid"
        loads[int(token)] += weight
    return abs(loads[0] - loads[1])
