# O(n * m) worst case: compares the slice s[i:i+m] with p at every position (a new string is copied each time).
import sys


def main():
    s, p = sys.stdin.read().split()
    n, m = len(s), len(p)
    count = 0
    first = -1
    for i in range(n - m + 1):
        if s[i:i + m] == p:
            count += 1
            if first < 0:
                first = i + 1
    print(count, first)


main()
