# Next-fit decreasing height (NFDH): tallest panels first, filled left to right into shelves; only the newest shelf is ever reused (expected rank 3).


def solve(width, widths, heights):
    n = len(widths)
    order = sorted(range(n), key=lambda i: (-heights[i], -widths[i], i))
    corners = [None] * n
    shelf_y, shelf_h, x = 0, 0, 0
    for i in order:
        if x + widths[i] > width:  # open a new shelf on top of the current one
            shelf_y += shelf_h
            shelf_h, x = 0, 0
        corners[i] = (x, shelf_y)
        x += widths[i]
        shelf_h = max(shelf_h, heights[i])
    return [f"{x} {y}" for x, y in corners]
