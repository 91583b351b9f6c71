"""Checker of the `tour` score task: a closed tour through every stop scores its length.

The program returns one line per stop: the stops `0..n-1` in visiting order, each exactly once.
Anything else (wrong line count, a token that is not a plain decimal integer, a stop out of
range, a repeated stop) is "invalid". The score is the Euclidean length of the closed loop,
rounded to 6 decimals so that summation-order noise never reorders equal tours.
"""
import json
import math


def check(test_input: str, program_output: str, expected_output: str | None):
    instance = json.loads(test_input)
    xs, ys = instance["xs"], instance["ys"]
    n = len(xs)
    lines = program_output.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a single trailing newline is tolerated
    if len(lines) != n:
        return "invalid"
    order = []
    for line in lines:
        token = line.strip()
        if not token.isdigit() or not token.isascii():
            return "invalid"
        stop = int(token)
        if stop >= n:
            return "invalid"
        order.append(stop)
    if len(set(order)) != n:
        return "invalid"
    length = 0.0
    for a, b in zip(order, order[1:] + order[:1]):
        length += math.hypot(xs[a] - xs[b], ys[a] - ys[b])
    return round(length, 6)
