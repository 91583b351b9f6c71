"""Checker of the `bonding` score task: total strength of a valid set of bonds (higher is better).

Each output line is a bond "i j" between atoms i != j. Valid when every pair appears at most once
(in either order), both atoms exist, their squared distance is at most max_length^2, and no atom
has more bonds than its valence. A bond's strength is max_length^2 - squared distance (exact
integers). The empty answer is valid and scores 0.
"""
import json


def check(test_input: str, program_output: str, expected_output: str | None):
    instance = json.loads(test_input)
    n, atoms, limit = instance["n"], instance["atoms"], instance["max_length"]
    limit2 = limit * limit
    used = [0] * n
    seen = set()
    total = 0
    for line in program_output.split("\n"):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            return "invalid"
        i, j = int(parts[0]), int(parts[1])
        if i == j or i >= n or j >= n:
            return "invalid"
        pair = (min(i, j), max(i, j))
        if pair in seen:
            return "invalid"
        seen.add(pair)
        dx, dy = atoms[i][0] - atoms[j][0], atoms[i][1] - atoms[j][1]
        d2 = dx * dx + dy * dy
        if d2 > limit2:
            return "invalid"
        used[i] += 1
        used[j] += 1
        if used[i] > atoms[i][2] or used[j] > atoms[j][2]:
            return "invalid"
        total += limit2 - d2
    return float(total)
