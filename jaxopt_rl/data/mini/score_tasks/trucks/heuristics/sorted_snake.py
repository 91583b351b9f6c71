# Sorted snake: heaviest first, trucks in the order 0 1 1 0 0 1 1 0 ... (expected rank 3).


def solve(weights):
    truck = [0] * len(weights)
    for k, i in enumerate(sorted(range(len(weights)), key=lambda i: -weights[i])):
        truck[i] = (k + k // 2) % 2
    return [str(t) for t in truck]
