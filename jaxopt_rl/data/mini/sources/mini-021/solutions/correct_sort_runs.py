# O(N log N): sorts the whole word list, counts runs of equal words, then sorts the runs.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    words = sorted(data[2 : 2 + n])
    runs = []
    start = 0
    for i in range(1, n + 1):
        if i == n or words[i] != words[start]:
            runs.append((-(i - start), words[start]))
            start = i
    runs.sort()
    sys.stdout.write("".join(f"{w.decode()} {-c}\n" for c, w in runs[:k]))


main()
