# BUG: sorts (count, word) pairs with reverse=True, so words with equal counts come out in reverse alphabetical order.
import sys
from collections import Counter


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    counts = Counter(data[2 : 2 + n])
    ranked = sorted(((c, w) for w, c in counts.items()), reverse=True)[:k]
    sys.stdout.write("".join(f"{w.decode()} {c}\n" for c, w in ranked))


main()
