# O(n + m): Z-function of p + "#" + s; a position whose Z-value reaches |p| starts an occurrence.
import sys


def main():
    s, p = sys.stdin.read().split()
    t = p + "#" + s
    n, m = len(t), len(p)
    z = [0] * n
    left = right = 0
    count = 0
    first = -1
    for i in range(1, n):
        if i < right:
            z[i] = min(right - i, z[i - left])
        while i + z[i] < n and t[z[i]] == t[i + z[i]]:
            z[i] += 1
        if i + z[i] > right:
            left, right = i, i + z[i]
        if z[i] == m and i > m:
            count += 1
            if first < 0:
                first = i - m
    print(count, first)


main()
