# BUG: Counter.most_common breaks ties by first appearance in the text, not alphabetically.
import sys
from collections import Counter


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    counts = Counter(data[2 : 2 + n])
    sys.stdout.write("".join(f"{w.decode()} {c}\n" for w, c in counts.most_common(k)))


main()
