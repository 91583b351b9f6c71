# Alternate: parcels as given, trucks 0 1 0 1 ... (expected rank 4).


def solve(weights):
    return [str(i % 2) for i in range(len(weights))]
