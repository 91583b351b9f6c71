# O(n): split into blocks of k; each window is one block suffix plus the next block prefix, so max(suffix[i], prefix[i + k - 1]).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    t = list(map(int, data[2:2 + n]))
    prefix = t[:]
    for i in range(1, n):
        if i % k and prefix[i - 1] > prefix[i]:
            prefix[i] = prefix[i - 1]
    suffix = t[:]
    for i in range(n - 2, -1, -1):
        if (i + 1) % k and suffix[i + 1] > suffix[i]:
            suffix[i] = suffix[i + 1]
    out = [max(suffix[i], prefix[i + k - 1]) for i in range(n - k + 1)]
    print(" ".join(map(str, out)))


main()
