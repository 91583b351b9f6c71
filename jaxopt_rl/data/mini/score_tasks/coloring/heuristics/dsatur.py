# DSatur: always colour the vertex seeing the most distinct neighbour colours (ties: highest degree), smallest free colour (expected rank 2).


def solve(n, edges):
    adjacent = [set() for _ in range(n)]
    for u, v in edges:
        adjacent[u].add(v)
        adjacent[v].add(u)
    colour = [-1] * n
    seen = [set() for _ in range(n)]  # colours among the neighbours of each vertex
    uncoloured = set(range(n))
    while uncoloured:
        v = max(uncoloured, key=lambda x: (len(seen[x]), len(adjacent[x]), -x))
        c = 0
        while c in seen[v]:
            c += 1
        colour[v] = c
        uncoloured.remove(v)
        for w in adjacent[v]:
            seen[w].add(c)
    return [str(c) for c in colour]
