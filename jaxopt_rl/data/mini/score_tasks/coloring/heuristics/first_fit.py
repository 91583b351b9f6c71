# First-fit greedy in vertex-number order: each vertex takes the smallest colour unused by its neighbours (expected rank 3).


def solve(n, edges):
    adjacent = [[] for _ in range(n)]
    for u, v in edges:
        adjacent[u].append(v)
        adjacent[v].append(u)
    colour = [-1] * n
    for v in range(n):
        taken = {colour[w] for w in adjacent[v]}
        c = 0
        while c in taken:
            c += 1
        colour[v] = c
    return [str(c) for c in colour]
