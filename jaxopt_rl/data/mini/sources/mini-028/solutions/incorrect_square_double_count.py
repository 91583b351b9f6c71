# BUG: counts both i and x // i for every divisor i <= sqrt(x), so the square root of a perfect square is counted twice.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    out = []
    for token in data[1 : q + 1]:
        x = int(token)
        count = 0
        i = 1
        while i * i <= x:
            if x % i == 0:
                count += 2
            i += 1
        out.append(count)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
