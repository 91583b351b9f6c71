# O(q * sqrt x) worst case with a cache: trial division by every integer, repeated numbers answered from a dict.
import sys


def divisor_count(x):
    count = 1
    d = 2
    while d * d <= x:
        if x % d == 0:
            e = 0
            while x % d == 0:
                x //= d
                e += 1
            count *= e + 1
        d += 1
    return count * 2 if x > 1 else count


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    cache = {}
    out = []
    for token in data[1 : q + 1]:
        x = int(token)
        if x not in cache:
            cache[x] = divisor_count(x)
        out.append(cache[x])
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
