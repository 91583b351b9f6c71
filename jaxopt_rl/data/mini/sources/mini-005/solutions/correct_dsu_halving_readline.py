# O((n + q) log n): disjoint sets with path halving but no union by size, one sys.stdin.readline() call per event.
import sys


def main():
    readline = sys.stdin.readline
    n, q = map(int, readline().split())
    parent = list(range(n + 1))
    out = []
    for _ in range(q):
        kind, a, b = readline().split()
        a, b = int(a), int(b)
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        if kind == "Q":
            out.append("YES" if a == b else "NO")
        elif a != b:
            parent[a] = b
    sys.stdout.write("\n".join(out) + "\n")


main()
