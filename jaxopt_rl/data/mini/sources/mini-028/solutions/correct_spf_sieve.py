# O(M log log M + q log x): smallest-prime-factor sieve up to the largest query, then each number factored by SPF jumps.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    values = [int(x) for x in data[1 : q + 1]]
    top = max(values)
    spf = list(range(top + 1))
    i = 2
    while i * i <= top:
        if spf[i] == i:
            for j in range(i * i, top + 1, i):
                if spf[j] == j:
                    spf[j] = i
        i += 1
    out = []
    for x in values:
        count = 1
        while x > 1:
            p, e = spf[x], 0
            while x % p == 0:
                x //= p
                e += 1
            count *= e + 1
        out.append(count)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
