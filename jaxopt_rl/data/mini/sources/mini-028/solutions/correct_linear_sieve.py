# O(M): linear (Euler) sieve computing the divisor count of every number up to the largest query via the exponent of its smallest prime.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    values = [int(x) for x in data[1 : q + 1]]
    top = max(values)
    divisors = [0] * (top + 1)
    low_exp = [0] * (top + 1)  # exponent of the smallest prime factor
    divisors[1] = 1
    primes = []
    for i in range(2, top + 1):
        if divisors[i] == 0:
            primes.append(i)
            divisors[i] = 2
            low_exp[i] = 1
        for p in primes:
            j = i * p
            if j > top:
                break
            if i % p == 0:
                low_exp[j] = low_exp[i] + 1
                divisors[j] = divisors[i] // (low_exp[i] + 1) * (low_exp[j] + 1)
                break
            low_exp[j] = 1
            divisors[j] = divisors[i] * 2
    sys.stdout.write("\n".join(str(divisors[x]) for x in values) + "\n")


main()
