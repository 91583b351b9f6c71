# O(n) on random data, O(n * k) worst case (falling readings): keep the window maximum's index; rescan the window slice only when it slides out.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    t = list(map(int, data[2:2 + n]))
    best_i = 0
    out = []
    for i in range(n):
        if t[i] >= t[best_i]:
            best_i = i
        elif best_i <= i - k:
            lo = i - k + 1
            window = t[lo:i + 1]
            best_i = lo + window.index(max(window))
        if i >= k - 1:
            out.append(t[best_i])
    print(" ".join(map(str, out)))


main()
