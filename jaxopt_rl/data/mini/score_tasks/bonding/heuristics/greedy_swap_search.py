# Strongest-first greedy, then local search with short augmenting moves (re-route a bond to two free partners, or evict a weak bond and re-bond the evicted atom) (expected rank 1).

MAX_PASSES = 30


def solve(n, atoms, max_length):
    limit2 = max_length * max_length
    near = [[] for _ in range(n)]  # near[i]: (strength, j), strongest first
    candidates = []
    for i in range(n):
        xi, yi = atoms[i][0], atoms[i][1]
        for j in range(i + 1, n):
            d2 = (atoms[j][0] - xi) ** 2 + (atoms[j][1] - yi) ** 2
            if d2 < limit2:
                s = limit2 - d2
                candidates.append((s, i, j))
                near[i].append((s, j))
                near[j].append((s, i))
    for lst in near:
        lst.sort(reverse=True)
    candidates.sort(reverse=True)
    valence = [a[2] for a in atoms]
    bonds = [dict() for _ in range(n)]  # bonds[i][j] = strength

    def free(x):
        return valence[x] - len(bonds[x])

    def add(i, j, s):
        bonds[i][j] = bonds[j][i] = s

    def remove(i, j):
        del bonds[i][j]
        del bonds[j][i]

    def best_free_partner(x, banned):
        for s, y in near[x]:
            if y not in banned and y not in bonds[x] and free(y) > 0:
                return s, y
        return 0, -1

    for s, i, j in candidates:
        if free(i) > 0 and free(j) > 0:
            add(i, j, s)

    for _ in range(MAX_PASSES):
        improved = False
        # Move 1: replace bond (a, b) by (a, c) and (b, d) with free partners c and d.
        for a in range(n):
            for b, s_ab in list(bonds[a].items()):
                if b < a or b not in bonds[a]:
                    continue
                remove(a, b)
                s_ac, c = best_free_partner(a, {b})
                if c >= 0:
                    add(a, c, s_ac)
                s_bd, d = best_free_partner(b, {a})
                if s_ac + s_bd > s_ab:
                    if d >= 0:
                        add(b, d, s_bd)
                    improved = True
                else:
                    if c >= 0:
                        remove(a, c)
                    add(a, b, s_ab)
        # Move 2: add (i, j) evicting the weakest bond (i, k) of a full atom; k re-bonds if it can.
        for s, i, j in candidates:
            if j in bonds[i]:
                continue
            for x, y in ((i, j), (j, i)):
                if free(x) == 0 and free(y) > 0:
                    k = min(bonds[x], key=bonds[x].get)
                    s_xk = bonds[x][k]
                    remove(x, k)
                    add(x, y, s)
                    s_km, m = best_free_partner(k, {x})
                    if s + s_km > s_xk:
                        if m >= 0:
                            add(k, m, s_km)
                        improved = True
                        break
                    remove(x, y)
                    add(x, k, s_xk)
        if not improved:
            break
    return [f"{i} {j}" for i in range(n) for j in bonds[i] if i < j]
