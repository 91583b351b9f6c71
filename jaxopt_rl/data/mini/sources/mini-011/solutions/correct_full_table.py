# O(n * m) time and memory: the full (n+1) x (m+1) DP table filled row by row with double indexing.
import sys


def main():
    lines = sys.stdin.read().split()
    a, b = lines[0], lines[1]
    n, m = len(a), len(b)
    dist = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        dist[i][0] = i
    for j in range(m + 1):
        dist[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                dist[i][j] = dist[i - 1][j - 1]
            else:
                dist[i][j] = 1 + min(dist[i - 1][j], dist[i][j - 1], dist[i - 1][j - 1])
    print(dist[n][m])


main()
