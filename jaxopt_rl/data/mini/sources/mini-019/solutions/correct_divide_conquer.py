# O(n log n): recursive divide and conquer, best run left, right, or crossing the middle.
import sys


def best_run(values, lo, hi):
    if hi - lo == 1:
        return values[lo]
    mid = (lo + hi) // 2
    left_best = best_run(values, lo, mid)
    right_best = best_run(values, mid, hi)
    total, cross_left = 0, None
    for i in range(mid - 1, lo - 1, -1):
        total += values[i]
        if cross_left is None or total > cross_left:
            cross_left = total
    total, cross_right = 0, None
    for i in range(mid, hi):
        total += values[i]
        if cross_right is None or total > cross_right:
            cross_right = total
    return max(left_best, right_best, cross_left + cross_right)


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    values = [int(x) for x in data[1 : n + 1]]
    print(best_run(values, 0, n))


main()
