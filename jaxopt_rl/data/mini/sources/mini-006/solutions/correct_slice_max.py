# O(n * k): recompute max() over every window slice from scratch (the scan runs in C, but k times per reading).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    t = list(map(int, data[2:2 + n]))
    print(" ".join(str(max(t[i:i + k])) for i in range(n - k + 1)))


main()
