# O(N * D): collects the distinct words, then counts each one with list.count over the whole text.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    words = data[2 : 2 + n]
    distinct = set(words)
    ranked = sorted((-words.count(w), w) for w in distinct)
    sys.stdout.write("".join(f"{w.decode()} {-c}\n" for c, w in ranked[:k]))


main()
