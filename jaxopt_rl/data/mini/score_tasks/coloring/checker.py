"""Checker of the `coloring` score task: a proper colouring scores its number of colours (lower is better).

The program returns one line per vertex, line `i` holding the colour of vertex `i` as an integer
in `[0, n)`. Anything else (wrong line count, a non-integer, a colour out of range, an edge whose
two ends share a colour) is "invalid".
"""
import json


def check(test_input: str, program_output: str, expected_output: str | None):
    instance = json.loads(test_input)
    n = instance["n"]
    lines = program_output.strip().split("\n") if program_output.strip() else []
    if len(lines) != n:
        return "invalid"
    colours = []
    for line in lines:
        token = line.strip()
        if not token.lstrip("-").isdigit():
            return "invalid"
        colour = int(token)
        if not 0 <= colour < n:
            return "invalid"
        colours.append(colour)
    for u, v in instance["edges"]:
        if colours[u] == colours[v]:
            return "invalid"
    return float(len(set(colours)))
