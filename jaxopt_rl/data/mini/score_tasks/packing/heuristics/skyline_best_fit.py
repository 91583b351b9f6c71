# Skyline best fit (fill the lowest gap with the first panel in a priority order that fits, beside the taller neighbour), run with four panel orders; the shortest layout wins (expected rank 1).

ORDERS = (
    lambda w, h: (-w, -h),  # widest first
    lambda w, h: (-h, -w),  # tallest first
    lambda w, h: (-w * h, -w),  # largest area first
    lambda w, h: (-(w + h), -w),  # largest perimeter first
)


def best_fit(width, widths, heights, priority):
    """One skyline best-fit layout; returns (used length, corners)."""
    n = len(widths)
    unplaced = sorted(range(n), key=lambda i: (*priority(widths[i], heights[i]), i))
    skyline = [[0, width, 0]]  # segments [x, length, y], left to right, covering [0, width]
    corners = [None] * n
    top = 0
    while unplaced:
        k = min(range(len(skyline)), key=lambda s: (skyline[s][2], skyline[s][0]))
        x, length, y = skyline[k]
        pick = next((j for j, i in enumerate(unplaced) if widths[i] <= length), None)
        if pick is None:
            # nothing fits: waste the gap by raising it to its lower neighbour
            skyline[k][2] = min(skyline[s][2] for s in (k - 1, k + 1) if 0 <= s < len(skyline))
        else:
            i = unplaced.pop(pick)
            w, h = widths[i], heights[i]
            left_y = skyline[k - 1][2] if k > 0 else float("inf")
            right_y = skyline[k + 1][2] if k + 1 < len(skyline) else float("inf")
            if left_y >= right_y:  # sit against the taller neighbour
                corners[i] = (x, y)
                pieces = [[x, w, y + h], [x + w, length - w, y]]
            else:
                corners[i] = (x + length - w, y)
                pieces = [[x, length - w, y], [x + length - w, w, y + h]]
            skyline[k:k + 1] = [p for p in pieces if p[1] > 0]
            top = max(top, y + h)
        merged = []
        for seg in skyline:
            if merged and merged[-1][2] == seg[2]:
                merged[-1][1] += seg[1]
            else:
                merged.append(seg)
        skyline = merged
    return top, corners


def solve(width, widths, heights):
    _, corners = min((best_fit(width, widths, heights, order) for order in ORDERS),
                     key=lambda layout: layout[0])
    return [f"{x} {y}" for x, y in corners]
