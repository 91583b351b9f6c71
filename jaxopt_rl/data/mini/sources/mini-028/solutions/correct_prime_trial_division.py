# O(sqrt(M) + q * pi(sqrt x)): byte sieve of primes up to 1000, then trial division of each number by primes only.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    values = [int(x) for x in data[1 : q + 1]]
    limit = int(max(values) ** 0.5) + 1
    is_prime = bytearray([1]) * (limit + 1)
    is_prime[0:2] = b"\x00\x00"
    for i in range(2, int(limit**0.5) + 1):
        if is_prime[i]:
            is_prime[i * i :: i] = bytes(len(range(i * i, limit + 1, i)))
    primes = [i for i in range(limit + 1) if is_prime[i]]
    out = []
    for x in values:
        count = 1
        for p in primes:
            if p * p > x:
                break
            if x % p == 0:
                e = 0
                while x % p == 0:
                    x //= p
                    e += 1
                count *= e + 1
        if x > 1:
            count *= 2  # one prime factor above the square root remains
        out.append(count)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
