# BUG: str.count counts NON-overlapping occurrences, so repeats that share letters (e.g. "aa" in "aaaa") are undercounted.
import sys


def main():
    s, p = sys.stdin.read().split()
    i = s.find(p)
    print(s.count(p), i + 1 if i >= 0 else -1)


main()
