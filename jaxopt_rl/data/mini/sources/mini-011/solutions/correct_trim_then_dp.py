# O(n + n' * m'): strip the common prefix and suffix first, then a two-row DP only over the differing middles.
import sys


def main():
    lines = sys.stdin.read().split()
    a, b = lines[0], lines[1]
    p = 0
    while p < len(a) and p < len(b) and a[p] == b[p]:
        p += 1
    a, b = a[p:], b[p:]
    s = 0
    while s < len(a) and s < len(b) and a[-1 - s] == b[-1 - s]:
        s += 1
    a, b = a[:len(a) - s], b[:len(b) - s]
    if not a or not b:
        print(len(a) + len(b))
        return
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] * (len(b) + 1)
        left = i
        for j, cb in enumerate(b, 1):
            best = prev[j - 1] if ca == cb else prev[j - 1] + 1
            if prev[j] + 1 < best:
                best = prev[j] + 1
            if left + 1 < best:
                best = left + 1
            cur[j] = left = best
        prev = cur
    print(prev[-1])


main()
