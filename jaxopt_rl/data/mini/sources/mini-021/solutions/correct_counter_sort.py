# O(N + D log D): collections.Counter over all words, then one sort by (-count, word); bulk read.
import sys
from collections import Counter


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    counts = Counter(data[2 : 2 + n])
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k]
    sys.stdout.write("".join(f"{w.decode()} {c}\n" for w, c in ranked))


main()
