# BUG: trial division stops at sqrt of the ORIGINAL number and ignores what is left, missing a prime factor above the square root.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    out = []
    for token in data[1 : q + 1]:
        x = original = int(token)
        count = 1
        d = 2
        while d * d <= original:
            e = 0
            while x % d == 0:
                x //= d
                e += 1
            count *= e + 1
            d += 1
        out.append(count)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
