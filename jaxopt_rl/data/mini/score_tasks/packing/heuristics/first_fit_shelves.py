# First-fit decreasing height (FFDH): tallest panels first; each goes to the lowest shelf with room left, else a new shelf (expected rank 2).


def solve(width, widths, heights):
    n = len(widths)
    order = sorted(range(n), key=lambda i: (-heights[i], -widths[i], i))
    corners = [None] * n
    shelves = []  # [y, used width]; a shelf's height is its first (tallest) panel's height
    top = 0
    for i in order:
        for shelf in shelves:
            if shelf[1] + widths[i] <= width:
                corners[i] = (shelf[1], shelf[0])
                shelf[1] += widths[i]
                break
        else:
            shelves.append([top, widths[i]])
            corners[i] = (0, top)
            top += heights[i]
    return [f"{x} {y}" for x, y in corners]
