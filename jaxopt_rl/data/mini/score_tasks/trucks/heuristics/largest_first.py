# Largest first: heaviest parcel first, each onto the lighter truck (expected rank 1).


def solve(weights):
    truck = [0] * len(weights)
    loads = [0, 0]
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
        t = 0 if loads[0] <= loads[1] else 1
        truck[i] = t
        loads[t] += weights[i]
    return [str(t) for t in truck]
