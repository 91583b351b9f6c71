"""Checker of the `packing` score task: a valid layout scores its used roll length.

The program returns one line per panel, `"x y"` (two integers): the lower-left corner of the
panel, which covers the closed box [x, x + w] x [y, y + h]. A layout is valid when every panel
lies inside the roll (x >= 0, y >= 0, x + w <= width) and no two panels share interior area
(shared edges and corners are fine). Anything else is "invalid". The score is the largest
y + h (an integer, returned as a float).
"""
import json


def _parse(line):
    tokens = line.split()
    if len(tokens) != 2:
        return None
    values = []
    for token in tokens:
        body = token[1:] if token[:1] == "-" else token
        if not body.isdigit() or not body.isascii():
            return None
        values.append(int(token))
    return values


def check(test_input: str, program_output: str, expected_output: str | None):
    instance = json.loads(test_input)
    width, widths, heights = instance["width"], instance["widths"], instance["heights"]
    n = len(widths)
    lines = program_output.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a single trailing newline is tolerated
    if len(lines) != n:
        return "invalid"
    boxes = []
    for i, line in enumerate(lines):
        corner = _parse(line)
        if corner is None:
            return "invalid"
        x, y = corner
        if x < 0 or y < 0 or x + widths[i] > width:
            return "invalid"
        boxes.append((x, x + widths[i], y, y + heights[i]))
    # sweep along x: only panels whose x-ranges overlap need a y test
    boxes.sort()
    active = []
    for x0, x1, y0, y1 in boxes:
        active = [b for b in active if b[1] > x0]
        for _, _, b_y0, b_y1 in active:
            if b_y0 < y1 and y0 < b_y1:
                return "invalid"
        active.append((x0, x1, y0, y1))
    return float(max(y1 for _, _, _, y1 in boxes))
