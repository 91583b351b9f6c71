# Input-order greedy: parcels as given, each onto the lighter truck (expected rank 2).


def solve(weights):
    loads = [0, 0]
    out = []
    for w in weights:
        t = 0 if loads[0] <= loads[1] else 1
        loads[t] += w
        out.append(str(t))
    return out
