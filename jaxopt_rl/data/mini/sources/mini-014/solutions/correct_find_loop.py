# O(n + occ * m) in C: repeated str.find starting one position after the previous hit (overlaps allowed).
import sys


def main():
    s, p = sys.stdin.read().split()
    count = 0
    first = -1
    i = s.find(p)
    if i >= 0:
        first = i + 1
    while i >= 0:
        count += 1
        i = s.find(p, i + 1)
    print(count, first)


main()
