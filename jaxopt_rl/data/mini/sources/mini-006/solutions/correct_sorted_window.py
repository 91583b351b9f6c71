# O(n log k + n k) memmove: the window kept as a sorted list (bisect.insort in, bisect + del out); the maximum is the last element.
import sys
from bisect import bisect_left, insort


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    t = list(map(int, data[2:2 + n]))
    window = sorted(t[:k])
    out = [window[-1]]
    for i in range(k, n):
        del window[bisect_left(window, t[i - k])]
        insort(window, t[i])
        out.append(window[-1])
    print(" ".join(map(str, out)))


main()
