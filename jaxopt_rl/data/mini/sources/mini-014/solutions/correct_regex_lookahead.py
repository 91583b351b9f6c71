# O(n * m) worst case in C: re.finditer with a zero-width lookahead (?=p), so overlapping occurrences are all reported.
import re
import sys


def main():
    s, p = sys.stdin.read().split()
    count = 0
    first = -1
    for match in re.finditer(f"(?={re.escape(p)})", s):
        if first < 0:
            first = match.start() + 1
        count += 1
    print(count, first)


main()
