# O(n * m): classic DP keeping two rows, with the three-way minimum written as if-chains on local variables.
import sys


def main():
    lines = sys.stdin.read().split()
    a, b = lines[0], lines[1]
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] * (len(b) + 1)
        left = i
        for j, cb in enumerate(b, 1):
            best = prev[j - 1] if ca == cb else prev[j - 1] + 1
            up = prev[j] + 1
            if up < best:
                best = up
            if left + 1 < best:
                best = left + 1
            cur[j] = left = best
        prev = cur
    print(prev[-1])


main()
