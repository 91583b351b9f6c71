# Atoms in index order each bond to their nearest partners that still have free valence (expected rank 3).


def solve(n, atoms, max_length):
    limit2 = max_length * max_length
    free = [a[2] for a in atoms]
    bonds = []
    bonded = set()
    for i in range(n):
        xi, yi = atoms[i][0], atoms[i][1]
        near = []
        for j in range(n):
            if j != i:
                d2 = (atoms[j][0] - xi) ** 2 + (atoms[j][1] - yi) ** 2
                if d2 <= limit2:
                    near.append((d2, j))
        near.sort()
        for _, j in near:
            if free[i] == 0:
                break
            pair = (min(i, j), max(i, j))
            if free[j] > 0 and pair not in bonded:
                bonded.add(pair)
                free[i] -= 1
                free[j] -= 1
                bonds.append(f"{i} {j}")
    return bonds
