# Global greedy: all candidate bonds sorted by strength, strongest first, kept while both atoms have free valence (expected rank 2).


def solve(n, atoms, max_length):
    limit2 = max_length * max_length
    candidates = []
    for i in range(n):
        xi, yi = atoms[i][0], atoms[i][1]
        for j in range(i + 1, n):
            d2 = (atoms[j][0] - xi) ** 2 + (atoms[j][1] - yi) ** 2
            if d2 < limit2:  # a bond of zero strength is never worth a valence slot
                candidates.append((limit2 - d2, i, j))
    candidates.sort(reverse=True)
    free = [a[2] for a in atoms]
    bonds = []
    for _, i, j in candidates:
        if free[i] and free[j]:
            free[i] -= 1
            free[j] -= 1
            bonds.append(f"{i} {j}")
    return bonds
